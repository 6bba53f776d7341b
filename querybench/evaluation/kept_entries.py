"""What a verdict kept on disk is made of (`verdict_cache.py`, `bird_run_cache.py`): the code
part of its key, the source bytes of the modules that decide it, read from disk (never
imported), so that editing a scorer makes every entry it wrote a miss; and the entry itself,
JSON behind its sha256, so that a damaged or foreign entry is a miss rather than a verdict."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hashlib import _Hash

_DIGEST = 32


def add_sources(digest: _Hash, modules: Sequence[str]) -> bool:
    """Feed each module's name, length and source to `digest`; False when one cannot be read
    (then nothing should be stored or looked up)."""
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            return False
        try:
            source = Path(spec.origin).read_bytes()
        except OSError:
            return False
        digest.update(f"{name} {len(source)}\n".encode())
        digest.update(source)
    return True


def sealed(key: str, body: dict[str, Any]) -> bytes:
    """The entry of `body` under `key`: the sha256 of its JSON, then the JSON."""
    payload = json.dumps({"key": key, **body}).encode()
    return hashlib.sha256(payload).digest() + payload


def unsealed(entry: bytes, key: str) -> dict[str, Any] | None:
    """The body `sealed` put under `key`; None when the digest, the JSON or the key is not."""
    payload = entry[_DIGEST:]
    if hashlib.sha256(payload).digest() != entry[:_DIGEST]:
        return None
    try:
        data = json.loads(payload)
    except ValueError:
        return None
    return data if isinstance(data, dict) and data.get("key") == key else None
