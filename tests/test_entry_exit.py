"""The console script exits without the interpreter's teardown, yet as a normal exit ends: its
output whole, its exit handlers run, its code kept, and a thread still running waited for."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.test_cli import _lite_submission

SCRIPT = Path(sys.prefix) / "bin" / "querybench"


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_an_eval_through_a_pipe_writes_all_it_says(tmp_path: Path) -> None:
    _, argv = _lite_submission(tmp_path)
    out = tmp_path / "scores.jsonl"
    done = subprocess.run(
        [str(SCRIPT), *argv, "--output", str(out)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "wrote 3 lines to" in done.stderr
    assert "missing_prediction 2" in done.stdout  # the summary's last lines, flushed
    assert len(out.read_text().splitlines()) == 3
    assert Path(f"{out}.manifest.json").is_file()
    missing = [str(SCRIPT), "eval", "spider2-lite", "--predictions", str(tmp_path / "none")]
    bad = subprocess.run(missing, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "predictions folder not found" in bad.stderr


def test_exit_handlers_run_and_the_code_is_kept(tmp_path: Path) -> None:
    mark = tmp_path / "handler-ran"
    done = _python(
        "import atexit, sys\n"
        f"atexit.register(lambda: open({str(mark)!r}, 'w').write('ran'))\n"
        "sys.argv = ['querybench', 'eval', 'spider2-lite', '--predictions', '/nonexistent']\n"
        "from querybench._entry import run\n"
        "run()\n"
    )
    assert done.returncode == 2, done.stderr
    assert mark.read_text() == "ran"


def test_a_thread_still_running_is_waited_for(tmp_path: Path) -> None:
    mark = tmp_path / "thread-done"
    done = _python(
        "import sys, threading, time\n"
        "def late():\n"
        "    time.sleep(0.5)\n"
        f"    open({str(mark)!r}, 'w').write('done')\n"
        "threading.Thread(target=late).start()\n"
        "sys.argv = ['querybench', '--help']\n"
        "from querybench._entry import run\n"
        "run()\n"
    )
    assert done.returncode == 0, done.stderr
    assert "Usage" in done.stdout
    assert mark.read_text() == "done"
