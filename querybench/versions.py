"""Installed distributions' versions, read without `importlib.metadata` where it can be.

`importlib.metadata` imports `email` and `zipfile`: a tenth of a small eval's start-up, paid
by every run that names its libraries' versions (the manifest, the verdict store's key).
"""

from __future__ import annotations

import functools
import os
import re
import sys


def installed_version(name: str) -> str | None:
    """`importlib.metadata.version(name)`, None for a package that is not installed.

    Read as `importlib.metadata` reads it (the first `<name>-*.dist-info` or `.egg-info` in
    `sys.path` order, its METADATA's first Version header) without importing it: it imports
    `email`, a tenth of a small eval's start-up. Whatever is not that plain layout (a zip on
    the path, another distribution finder, an unusual header) is left to it."""
    import importlib.machinery

    finders = [f for f in sys.meta_path if hasattr(f, "find_distributions")]
    if finders == [importlib.machinery.PathFinder]:
        wanted = re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")
        for entry in sys.path:
            found = _plain_version(entry or ".", wanted)
            if found is None:
                continue  # nothing of it here
            if found:
                return found
            break  # there, but not plainly readable
    import importlib.metadata

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _plain_version(entry: str, wanted: str) -> str | None:
    """The version of the first distribution `wanted` in path entry `entry`; None when the
    entry holds none, "" when it holds one that `_version_header` cannot read (or the entry
    is not a plain folder)."""
    try:
        changed = os.stat(entry).st_mtime_ns
    except OSError:
        return None
    infos = _distribution_folders(entry, changed)
    if infos is None:
        return ""
    path = infos.get(wanted)
    if path is None:
        return None
    for part in ("METADATA", "PKG-INFO", ""):
        try:
            with open(os.path.join(path, part) if part else path, encoding="utf-8") as f:
                return _version_header(f.read())
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
            continue
    return ""


@functools.cache
def _distribution_folders(entry: str, changed: int) -> dict[str, str] | None:
    """The first `.dist-info` / `.egg-info` of each normalized name in `entry`, in listing
    order as `importlib.metadata` takes them (listed again when the folder's mtime `changed`);
    None for an entry that is not a plain folder."""
    if entry.lower().endswith(".egg"):
        return None
    try:
        children = os.listdir(entry)
    except NotADirectoryError:
        return None
    except OSError:
        return {}
    infos: dict[str, str] = {}
    for child in children:
        low = child.lower()
        if low.endswith((".dist-info", ".egg-info")):
            stem = low.rpartition(".")[0].partition("-")[0]
            name = re.sub(r"[-_.]+", "-", stem).replace("-", "_")
            infos.setdefault(name, os.path.join(entry, child))
    return infos


def _version_header(text: str) -> str:
    """The value of the first Version header of metadata `text`, "" when it has none or its
    headers are not plain `Name: value` lines."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line:
            return ""
        key, colon, value = line.partition(":")
        if not colon or line[0] in " \t":
            return ""
        if key.lower() == "version":
            follows = lines[i + 1] if i + 1 < len(lines) else ""
            return "" if follows[:1] in (" ", "\t") else value.lstrip(" \t")
    return ""
