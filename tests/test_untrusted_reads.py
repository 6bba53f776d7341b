"""Files of a run folder (verify's results and manifest, the summary, sessions, trajectories)
and of a data folder an archive filled (Spider 1.0's tables.json and dev.json) are read by the
shared reader (`input_files.read_text`): a FIFO in a file's place never holds the read, a link
out of the run folder is refused with the reason, not followed."""

from __future__ import annotations

import os
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
from tests.test_regular_databases import within


def _returns(call: Callable[[], Any], fifo: Path) -> Any:
    """`call()`'s value (or the exception it raised) once it returned; a call still reading
    the FIFO fails the test (`within`)."""
    return within(call, [fifo])


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


def test_an_external_knowledge_name_out_of_the_documents_folder_is_refused_not_read(
    tmp_path: Path,
) -> None:
    from querybench.context.resolve import task_document
    from querybench.engines.registry import EngineKind
    from querybench.tasks.model import Task

    documents = tmp_path / "spider2" / "spider2-lite" / "resource" / "documents"
    documents.mkdir(parents=True)
    (tmp_path / "secret.md").write_text("host secret", encoding="utf-8")
    ref = "../../../../secret.md"  # a task file's name, as a task file may hold one
    task = Task("x", "spider2-lite", "q", "db", EngineKind.SQLITE, external_knowledge=ref)
    with pytest.raises(DataError, match=r"secret.md, outside .*documents \(not followed\)"):
        task_document(task, tmp_path)
    (documents / "ok.md").write_text("kept", encoding="utf-8")
    found = task_document(Task("x", "spider2-lite", "q", "db", EngineKind.SQLITE, None), tmp_path)
    assert found is None
    ok = Task("x", "spider2-lite", "q", "db", EngineKind.SQLITE, external_knowledge="ok.md")
    document = task_document(ok, tmp_path)
    assert document is not None and document.text == "kept"


def test_a_fifo_in_a_data_folder_an_archive_filled_does_not_hang(tmp_path: Path) -> None:
    from querybench.context.documents import bigquery_functions
    from querybench.engines import spider2_metadata_load
    from querybench.evaluation.spider1.evaluate import _hardness_by_line
    from querybench.evaluation.spider2.csv_cache import read_result_table
    from querybench.methods.examples import _read_file
    from querybench.report.audit import _duplicate_names
    from querybench.tasks.spider2_metadata import _schema_tables

    gold = _fifo(tmp_path / "gold" / "x.csv")
    refused = _returns(lambda: read_result_table(gold, "gold"), gold)
    assert isinstance(refused, DataError) and "not a regular file" in str(refused)
    assert _returns(lambda: _duplicate_names(gold), gold) == []

    table = _fifo(tmp_path / "resource" / "databases" / "db" / "schema" / "t.json")
    refused = _returns(lambda: _schema_tables(table.parent), table)
    assert isinstance(refused, DataError) and "not a regular file" in str(refused)
    refused = _returns(lambda: spider2_metadata_load._read_specs(table.parent, "sqlite"), table)
    assert isinstance(refused, DataError) and "bad table metadata" in str(refused)

    docs = _fifo(tmp_path / "syntax" / "bigquery_functions" / "bigquery_functions.json")
    refused = _returns(lambda: bigquery_functions(docs.parent.parent), docs)
    assert isinstance(refused, DataError) and "not a regular file" in str(refused)

    pool = _fifo(tmp_path / "train.json")
    refused = _returns(lambda: _read_file(pool), pool)
    assert isinstance(refused, DataError) and "not a regular file" in str(refused)

    questions = _fifo(tmp_path / "spider1" / "dev_questions.json")
    refused = _returns(lambda: _hardness_by_line(questions, []), questions)
    assert isinstance(refused, DataError) and "not a regular file" in str(refused)
