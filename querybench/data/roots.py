"""The one rule for where benchmark data is: ordered roots, searched item by item.

Every reader (tasks, gold, local databases, emulation files, sql mode's default database
folder, `audit`, the agent, the RL environments) looks a relative path up in the same
ordered roots: `$QUERYBENCH_DATA`, then `../shared/data` beside the checkout (a checkout's
only: an installed package has none), then the user data dir. Each item is looked up on its
own, so a benchmark's task file may come from one root and its databases from another
(fetched later into the user data dir). An explicit data
folder (`--data-dir`, `data_dir=`) replaces the roots: only that folder is searched.
`data fetch` writes into the first root a user controls (`$QUERYBENCH_DATA`, else the user
data dir), so what it writes is what the readers find.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

Roots = Sequence[Path]


def user_data_dir() -> Path:
    """The per-user folder `querybench data fetch` fills when `$QUERYBENCH_DATA` is unset."""
    import platformdirs  # imported when asked: every CLI command imports this module

    return Path(platformdirs.user_data_dir("querybench", appauthor=False))


def shared_data_dir() -> Path | None:
    """`../shared/data` beside the checkout (a team's read-only copy); None for an installed
    package, whose `site-packages/..` is no checkout's folder."""
    checkout = Path(__file__).resolve().parents[2]  # querybench/data/roots.py
    if not (checkout / "pyproject.toml").is_file():
        return None
    return checkout.parent / "shared" / "data"


def labelled_roots() -> list[tuple[str, Path]]:
    """(label, folder) of every data root, in search order, each folder once."""
    env = os.environ.get("QUERYBENCH_DATA")
    candidates = [("$QUERYBENCH_DATA", Path(env).expanduser())] if env else []
    shared = shared_data_dir()
    candidates += [("../shared/data", shared)] if shared is not None else []
    candidates += [("user data dir", user_data_dir())]
    out: list[tuple[str, Path]] = []
    seen: set[Path] = set()
    for label, folder in candidates:
        key = folder.resolve()
        if key not in seen:
            seen.add(key)
            out.append((label, folder))
    return out


def data_roots(data_dir: str | Path | None = None) -> list[Path]:
    """The folders searched, in order: `[data_dir]` when one is given, else every root."""
    if data_dir is not None:
        return [Path(data_dir).expanduser()]
    return [folder for _label, folder in labelled_roots()]


def data_root() -> Path:
    """The first root (where `data path` says data is read first)."""
    return data_roots()[0]


def fetch_target() -> Path:
    """Where `data fetch` writes by default: `$QUERYBENCH_DATA`, else the user data dir."""
    env = os.environ.get("QUERYBENCH_DATA")
    return Path(env).expanduser() if env else user_data_dir()


def find_data(*candidates: str | Path, roots: Roots | None = None) -> Path | None:
    """The first existing `root / candidate`, roots outermost: a root's own copy wins."""
    for root in data_roots() if roots is None else roots:
        for candidate in candidates:
            path = root / candidate
            if path.exists():
                return path
    return None


def find_root(*candidates: str | Path, roots: Roots | None = None) -> Path:
    """The first root holding one of `candidates`; the first root when none does."""
    searched = data_roots() if roots is None else list(roots)
    for root in searched:
        if any((root / candidate).exists() for candidate in candidates):
            return root
    return searched[0]
