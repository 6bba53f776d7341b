"""`querybench ... | head -1`: a closed stdout ends the command as other command-line tools end
(141, the shell's status for SIGPIPE), without a traceback, on typer's path and the eval fast
path alike (both exited 1 in silence, as click and rich do)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(sys.prefix) / "bin" / "querybench"


def _closed_stdout(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the console script with a stdout whose reader is already gone."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [str(SCRIPT), *argv],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=300,
        )
    finally:
        os.close(write)


@pytest.fixture
def spider1(tmp_path: Path) -> list[str]:
    db = tmp_path / "db" / "shop" / "shop.sqlite"
    db.parent.mkdir(parents=True)
    with sqlite3.connect(db) as conn:
        conn.executescript("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")
    conn.close()
    gold = tmp_path / "gold.sql"
    gold.write_text("SELECT x FROM t\tshop\n", encoding="utf-8")
    pred = tmp_path / "pred.txt"
    pred.write_text("SELECT x FROM t\n", encoding="utf-8")
    return ["--gold", str(gold), "--predictions", str(pred), "--db-dir", str(tmp_path / "db")]


@pytest.mark.parametrize("path", ["fast", "typer"])
def test_a_closed_stdout_exits_141_without_a_traceback(
    path: str, spider1: list[str], tmp_path: Path
) -> None:
    env = {**os.environ, "QUERYBENCH_CACHE": str(tmp_path / "cache")}
    argv = ["eval", "spider1", *spider1] if path == "fast" else ["data", "path"]
    result = _closed_stdout(argv, env)
    assert result.returncode == 141, result.stderr
    assert "Traceback" not in result.stderr and "Error" not in result.stderr
