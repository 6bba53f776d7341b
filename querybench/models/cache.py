"""On-disk response cache keyed by the full request, so a finished experiment re-runs free.

The key is sha256 of the endpoint, model, messages as sent (tool calls and answers included),
sampling parameters, offered tools and tool choice, and the sample index; one small JSON file
per entry, written to a temporary name and renamed (atomic).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from platformdirs import user_cache_dir

from querybench import json_input

log = logging.getLogger(__name__)


def default_cache_dir() -> Path:
    env = os.environ.get("QUERYBENCH_CACHE")
    base = Path(env).expanduser() if env else Path(user_cache_dir("querybench"))
    return base / "responses"


def request_key(payload: dict[str, Any]) -> str:
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ResponseCache:
    def __init__(self, directory: str | Path | None = None) -> None:
        self.dir = Path(directory) if directory is not None else default_cache_dir()

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            value = json_input.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, path)
        except (
            OSError
        ) as exc:  # a read-only or full cache costs money on a re-run, never the result
            log.warning("reply not cached in %s: %s", path.parent, exc)
