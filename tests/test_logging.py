"""Nothing is swallowed silently: a broad `except` never just passes, what the library skips is
logged with its reason, and `querybench --verbose` shows those logs."""

from __future__ import annotations

import ast
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from querybench.runs.store import RecordStore

ROOT = Path(__file__).resolve().parent.parent
_BROAD = {"Exception", "BaseException"}


def _silent_broad_handlers() -> list[tuple[str, int]]:
    found = []
    for path in sorted((ROOT / "querybench").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ExceptHandler):
                continue
            caught = node.type
            names = (
                {getattr(e, "id", "") for e in caught.elts}
                if isinstance(caught, ast.Tuple)
                else {getattr(caught, "id", "")}
            )
            broad = caught is None or bool(names & _BROAD)
            silent = all(isinstance(s, ast.Pass | ast.Continue) for s in node.body)
            if broad and silent:
                found.append((path.relative_to(ROOT).as_posix(), node.lineno))
    return found


def test_no_broad_except_passes_silently() -> None:
    assert _silent_broad_handlers() == [], "narrow it to what it expects, or log the reason"


def test_a_skipped_record_line_is_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "records.jsonl").write_text(
        '{"instance_id": "a", "status": "ok"}\n{"instance_id": "b", "sta\n', encoding="utf-8"
    )
    with caplog.at_level(logging.DEBUG, logger="querybench.runs.store"):
        records = RecordStore(tmp_path).load()
    assert list(records) == ["a"]
    assert "records.jsonl: unreadable record line skipped" in caplog.text


@pytest.mark.parametrize(("flags", "shown"), [([], "False"), (["--verbose"], "True")])
def test_verbose_shows_debug_logs(flags: list[str], shown: str) -> None:
    code = (
        "import logging, sys\n"
        "from querybench.cli import app\n"
        "try:\n"
        f"    app({[*flags, 'tasks', '--help']!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(logging.getLogger('querybench.runs.store').isEnabledFor(logging.DEBUG))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip().splitlines()[-1] == shown
