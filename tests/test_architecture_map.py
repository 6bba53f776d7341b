"""The map names every module: a module added to the package without its place in
docs/architecture.md fails here (by file name, or by its folder's name with its own)."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAP = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
FAMILIES = re.findall(r"`([\w/]*\*[\w.]*)`", MAP)  # `audit*.py`: modules named by a prefix


def test_every_module_is_on_the_map() -> None:
    missing = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "querybench").rglob("*.py"))
        if path.name != "__init__.py"
        and f"`{path.name}`" not in MAP
        and f"{path.parent.name}/{path.name}" not in MAP
        and not any(fnmatch.fnmatch(path.name, family) for family in FAMILIES)
    ]
    assert missing == [], f"not on docs/architecture.md's map: {missing}"
