"""`data fetch`: every part of a benchmark (`releases.PARTS`) into a data root.

A part already in place (as a reader would find it in the target or in any data root, whoever
put it there) is kept unless `force`; an archive comes from `from_dir` by its official name
when it is there, else from `$QUERYBENCH_DATA_MIRROR` or its official URL (resumable), so a
folder holding some of the archives fetches only the parts it lacks; its pinned sha256 and,
for the Spider2 repository, its commit are checked unless `verify=False`, and only a matched
sha256 is reported verified (`_check`); an HTML page where the archive was expected is
deleted and the error says how to download the file by hand and use `--from`. Unpacking is
staged (`fetch.unpack_routed`): a part's old files are cleared (`Part.before`) and its new
ones moved into place only once the whole archive unpacked with a sound layout.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import httpx

from querybench.data import releases
from querybench.data.download import Progress, download, html_title, unpack_routed, zip_commit
from querybench.data.releases import Archive, Part
from querybench.data.roots import data_roots
from querybench.errors import FetchError, HtmlPageError
from querybench.file_digests import file_sha256

# a server holding every archive under its official name (a local mirror, an air-gapped copy)
MIRROR_ENV = "QUERYBENCH_DATA_MIRROR"


@dataclass(frozen=True)
class PartOutcome:
    part: Part
    folder: Path
    fetched: bool  # False: already in place, left as it was
    check: str  # "sha256 verified", or "not verified: <why>"


def fetch_benchmark(
    benchmark: str,
    to: Path,
    *,
    from_dir: Path | None = None,
    verify: bool = True,
    force: bool = False,
    client: httpx.Client | None = None,
    on_start: Callable[[Archive], Progress] | None = None,
    retries: int = 3,
) -> list[PartOutcome]:
    """Fetch and unpack every part of `benchmark` into the data root `to`."""
    parts = releases.PARTS
    if benchmark not in parts:
        raise FetchError(f"nothing to fetch for {benchmark!r}; choose one of {', '.join(parts)}")
    outcomes = []
    with client or httpx.Client(follow_redirects=True, timeout=60.0) as http:
        for part in parts[benchmark]:
            marker = to / ".downloads" / f"{part.archive.file_name}.unpacking"
            where = None if force or marker.exists() else _in_place(part, to)
            if where is not None:
                outcomes.append(PartOutcome(part, where / part.folder, False, "left as it was"))
                continue
            progress = on_start(part.archive) if on_start else None
            archive = _obtain(
                part.archive, benchmark, to, from_dir, verify, http, progress, retries
            )
            checked = _check(part.archive, verify)
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
            before = None if part.before is None else functools.partial(part.before, to)
            if part.archive.file_name.endswith(".json"):  # a plain file, not an archive
                _place_file(archive, to, part, before)
            else:
                try:
                    unpack_routed(archive, to, part.route, nested=part.nested, before=before)
                except HtmlPageError as exc:
                    raise _html_error(part.archive, benchmark, exc.title) from None
            marker.unlink()
            outcomes.append(PartOutcome(part, to / part.folder, True, checked))
    return outcomes


def _place_file(source: Path, to: Path, part: Part, before: Callable[[], None] | None) -> None:
    """A part that is one plain file, copied beside its place and renamed into it."""
    destination = part.route(PurePosixPath(part.archive.file_name))
    assert destination is not None
    target = to / destination
    partial = target.with_name(f".{target.name}.unpacking")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_dir():
            raise FetchError(f"{source}: would write the file {target}, a folder now")
        shutil.copyfile(source, partial)
        if before is not None:
            before()
        partial.replace(target)
    except OSError as exc:
        raise FetchError(f"cannot put {source} at {target}: {exc}") from None
    finally:
        partial.unlink(missing_ok=True)


def _in_place(part: Part, to: Path) -> Path | None:
    """The root a reader finds `part` in: the target first, then every data root (a part in
    place is not fetched again, whoever put it there); None when no root holds it."""
    for root in [to, *(r for r in data_roots() if r.resolve() != to.resolve())]:
        if part.present(root):
            return root
    return None


def _check(archive: Archive, verify: bool) -> str:
    """What was verified: "sha256 verified" only when the archive's own bytes matched a pinned
    sha256; otherwise "not verified" and why. A GitHub archive's zip comment naming the
    pinned commit is checked (a wrong one is refused) but proves nothing: any zip can carry
    any comment."""
    if not verify:
        return "not verified: --no-verify"
    if archive.sha256:
        return "sha256 verified"
    if archive.commit:
        return (
            f"not verified: no sha256 is pinned for {archive.file_name}, which GitHub builds on "
            f"request; its zip comment names commit {archive.commit[:12]}, which any zip can carry"
        )
    return f"not verified: no sha256 is pinned for {archive.file_name}"


def _obtain(
    archive: Archive,
    benchmark: str,
    to: Path,
    from_dir: Path | None,
    verify: bool,
    http: httpx.Client,
    progress: Progress | None,
    retries: int,
) -> Path:
    """The archive file: from `from_dir` by its official name, else downloaded (resumable)."""
    sha = archive.sha256 if verify else None
    mirror = os.environ.get(MIRROR_ENV)
    url = f"{mirror.rstrip('/')}/{archive.file_name}" if mirror else archive.url
    names = (archive.file_name, *archive.aliases)
    found = None
    if from_dir is not None:
        found = next((from_dir / n for n in names if (from_dir / n).is_file()), None)
    if found is not None:
        if (title := html_title(found)) is not None:
            raise _html_error(archive, benchmark, title, kept=found)
        if sha is not None and (actual := file_sha256(found)) != sha:
            raise FetchError(
                f"{found}: checksum mismatch (expected sha256 {sha}, got {actual}); "
                "pass --no-verify for a newer release or a hand-made archive"
            )
        path = found
    else:  # not in --from DIR (it holds the others): this one part is downloaded
        try:
            path = download(
                url,
                to / ".downloads" / archive.file_name,
                sha256=sha,
                client=http,
                on_progress=progress,
                retries=retries,
            )
        except HtmlPageError as exc:
            raise _html_error(archive, benchmark, exc.title) from None
        except FetchError as exc:
            if from_dir is None:
                raise
            raise FetchError(
                f"--from {from_dir}: no {' or '.join(names)} there (the official file name; "
                f"download it from {archive.page or archive.url}), and fetching it failed: {exc}"
            ) from None
    if verify and archive.commit is not None:
        commit = zip_commit(path)
        if commit != archive.commit:
            raise FetchError(
                f"{path} is {'commit ' + commit if commit else 'not a GitHub archive'}, "
                f"expected xlang-ai/Spider2 at commit {archive.commit} ({archive.url}); "
                "pass --no-verify to use it anyway"
            )
    return path


def _html_error(
    archive: Archive, benchmark: str, title: str, kept: Path | None = None
) -> FetchError:
    where = archive.page or archive.url
    what = f"{kept} is" if kept else f"the download of {archive.file_name} was"
    done = "" if kept else " (the page was deleted, nothing was kept)"
    return FetchError(
        f"{what} an HTML page ({title!r}), not the archive{done}: Google Drive answers so when "
        f"the file's download quota is used up or it asks to confirm a virus scan. Download it "
        f"by hand: open {where} in a browser, save the file as {archive.file_name} in a "
        f"folder, then run `querybench data fetch {benchmark} --from FOLDER`."
    )
