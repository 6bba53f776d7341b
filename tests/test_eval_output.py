"""`eval --output`: a path that cannot take the results exits 2 before any scoring, and the
file is replaced whole or not at all (Ctrl-C, a full disk), the old one kept."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querybench.cli import app
from querybench.evaluation.record import InstanceResult
from tests.test_cli import _gold

runner = CliRunner()


def _args(tmp_path: Path, output: Path) -> list[str]:
    pred = tmp_path / "pred"
    pred.mkdir(exist_ok=True)
    (pred / "bq001.csv").write_text("a\n1\n")
    gold = _gold(tmp_path)
    return ["eval", "spider2-lite", "--predictions", str(pred), "--gold-dir", str(gold),
            "--output", str(output)]  # fmt: skip


def _says(output: str, text: str) -> bool:
    """`text` in `output`, whatever the terminal's wrapping (it can split a long path)."""
    return "".join(text.split()) in "".join(output.split())


def test_an_output_that_is_a_folder_exits_two_before_scoring(tmp_path: Path) -> None:
    # it used to score everything, then die with an IsADirectoryError traceback (exit 1)
    folder = tmp_path / "out"
    folder.mkdir()
    result = runner.invoke(app, _args(tmp_path, folder))
    assert result.exit_code == 2, result.output
    assert _says(result.output, f"--output {folder} is a folder")
    assert "missing_prediction" not in result.output  # nothing was scored
    assert list(folder.iterdir()) == []


def test_an_output_that_cannot_be_created_exits_two_before_scoring(tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    output = blocker / "scores.jsonl"  # its folder would have to be a file
    result = runner.invoke(app, _args(tmp_path, output))
    assert result.exit_code == 2, result.output
    assert _says(result.output, f"--output {output} cannot be written")
    assert "missing_prediction" not in result.output


def _fail_on_second_line(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    to_json = InstanceResult.to_json
    calls = []

    def failing(self: InstanceResult) -> object:
        calls.append(self)
        if len(calls) == 2:
            raise exc
        return to_json(self)

    monkeypatch.setattr(InstanceResult, "to_json", failing)


def test_a_full_disk_keeps_the_old_file_and_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    output = tmp_path / "scores.jsonl"
    output.write_text("old\n")
    _fail_on_second_line(monkeypatch, OSError(errno.ENOSPC, "No space left on device"))
    result = runner.invoke(app, _args(tmp_path, output))
    assert result.exit_code == 2, result.output
    assert _says(result.output, f"--output {output} could not be written: No space left on device")
    assert "missing_prediction" in result.output  # the summary is still printed
    assert output.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gold", "pred", "scores.jsonl"]


def test_ctrl_c_while_writing_leaves_the_old_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    output = tmp_path / "scores.jsonl"
    output.write_text("old\n")
    _fail_on_second_line(monkeypatch, KeyboardInterrupt())
    result = runner.invoke(app, _args(tmp_path, output))
    assert result.exit_code != 0
    assert output.read_text() == "old\n"  # it used to be truncated to one line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gold", "pred", "scores.jsonl"]


def test_an_output_that_is_a_symlink_writes_its_target(tmp_path: Path) -> None:
    # the results file was renamed over the link: the link became a file, its target kept the
    # old scores
    target = tmp_path / "kept" / "scores.jsonl"
    target.parent.mkdir()
    target.write_text("old\n")
    link = tmp_path / "latest.jsonl"
    link.symlink_to(target)
    result = runner.invoke(app, _args(tmp_path, link))
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and link.resolve() == target
    assert '"instance_id": "bq001"' in target.read_text()


def test_an_output_that_is_a_fifo_or_device_is_written_to(tmp_path: Path) -> None:
    # `--output /dev/stdout` or a named pipe: the results were renamed over it (as root the
    # pipe, or /dev/stdout itself, was replaced by a file; else the probe beside it was refused)
    fifo = tmp_path / "scores.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so the eval's open does not block
    try:
        result = runner.invoke(app, _args(tmp_path, fifo))
        assert result.exit_code == 0, result.output
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
        assert b'"instance_id": "bq001"' in os.read(reader, 1 << 16)
    finally:
        os.close(reader)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gold", "pred", "scores.fifo"]
