"""Files of a run folder (verify's results and manifest, the summary, sessions, trajectories)
and of a data folder an archive filled (Spider 1.0's tables.json and dev.json) are read by the
shared reader (`input_files.read_text`): a FIFO in a file's place never holds the read, a link
out of the run folder is refused with the reason, not followed."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from querybench.errors import DataError
from querybench.evaluation.spider1.exact_eval import read_tables_json
from querybench.report.trajectories import _task
from querybench.runs import eval_locations, outputs
from querybench.runs.manifest import Manifest
from querybench.runs.summary import RunSummary
from querybench.runs.verify import read_results

HANG_S = 10.0


def _returns(call: Callable[[], Any], fifo: Path) -> Any:
    """`call()`'s value (or the exception it raised) once it returned; a call still reading
    the FIFO after `HANG_S` is released by a writer, and the test fails."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(call())
        except Exception as exc:
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(HANG_S)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # the reader sees its end
        thread.join(HANG_S)
        pytest.fail(f"the read of {fifo.name} waited on the FIFO")
    return out[0]


def _fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def _link_out(path: Path, tmp_path: Path, text: str) -> Path:
    outside = tmp_path / "elsewhere.txt"
    outside.write_text(text, encoding="utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(outside)
    return outside


def test_verifys_results_linked_out_of_the_run_folder_are_refused_not_read(
    tmp_path: Path,
) -> None:
    results = tmp_path / "run" / "results.jsonl"
    outside = _link_out(results, tmp_path, '{"instance_id": "x"}\n')
    with pytest.raises(DataError, match=f"a link to {outside}, outside .* \\(not followed\\)"):
        read_results(results)


def test_a_manifest_linked_out_of_the_run_folder_is_refused_not_read(tmp_path: Path) -> None:
    manifest = tmp_path / "run" / "manifest.json"
    _link_out(manifest, tmp_path, "{}")
    with pytest.raises(DataError, match=r"outside .* \(not followed\)"):
        Manifest.read(manifest)


def test_a_fifo_as_the_run_summary_is_refused_at_once(tmp_path: Path) -> None:
    fifo = _fifo(tmp_path / "run" / "summary.json")
    refused = _returns(lambda: RunSummary.read(fifo.parent), fifo)
    assert isinstance(refused, DataError) and "not a regular file" in str(refused)


def test_a_fifo_as_the_sessions_file_does_not_hold_the_run(tmp_path: Path) -> None:
    fifo = _fifo(tmp_path / "run" / "sessions.jsonl")
    assert _returns(lambda: outputs._wall(fifo.parent), fifo) == 0.0


def test_a_fifo_as_a_trajectory_is_reported_unreadable_at_once(tmp_path: Path) -> None:
    fifo = _fifo(tmp_path / "run" / "trajectories" / "x.json")
    run = SimpleNamespace(results=[], trajectory_dir=fifo.parent)
    page = _returns(lambda: _task(run, "x"), fifo)  # type: ignore[arg-type]
    assert "unreadable trajectory" in page and "not a regular file" in page


def test_a_trajectory_linked_out_of_its_folder_is_not_shown(tmp_path: Path) -> None:
    trajectory = tmp_path / "run" / "trajectories" / "x.json"
    _link_out(trajectory, tmp_path, '{"steps": [{"thought": "host secret"}]}')
    page = _task(SimpleNamespace(results=[], trajectory_dir=trajectory.parent), "x")  # type: ignore[arg-type]
    assert "host secret" not in page and "not followed" in page


def test_a_fifo_as_a_data_folders_tables_json_or_dev_json_does_not_hang(tmp_path: Path) -> None:
    tables = _fifo(tmp_path / "spider1" / "tables.json")
    refused = _returns(lambda: read_tables_json(tables), tables)
    assert isinstance(refused, DataError) and "not a regular file" in str(refused)
    dev = _fifo(tmp_path / "spider1" / "dev.json")
    assert _returns(lambda: eval_locations._parsed_questions(dev), dev) is None
