"""The bird-sql README's run line, verbatim, against the scripted loopback server.

`vf-run` and the `bird_sql` module come from installing `environments/bird_sql` (`.ci/run` does it
with `--no-deps`, keeping the editable querybench it installed first). The README's install line
itself, in a fresh venv, needs the package index, so no test runs it; it was checked by hand:

    python3 -m venv /tmp/birdenv-venv && /tmp/birdenv-venv/bin/pip install -e environments/bird_sql

(1 min 31 s on a quiet machine, 11 min at load 13; ~110 packages; querybench built from this
checkout through the path dependency),
then these tests run with that venv's python. The null harness's chat program streams its
requests; the non-streaming path is `test_envs_bird_sql.py`'s rollout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import bird_layout
from tests.openai_server import ScriptedServer
from tests.vf_eval_run import reward, traces_by_name

BIN = Path(sys.executable).parent
README = Path(__file__).parent.parent / "environments" / "bird_sql" / "README.md"


def readme_run_line() -> str:
    """The README's run line, its placeholders filled: the scripted model, the server's URL
    (`{url}`) and the variable holding its key."""
    [line] = [text for text in README.read_text().splitlines() if text.startswith("vf-run ")]
    filled = (
        line.replace("<model>", "scripted")
        .replace("<OpenAI-compatible URL>", "{url}")
        .replace("<ENV_VAR_WITH_KEY>", "BIRD_TEST_KEY")
    )
    assert "<" not in filled, filled
    return filled


RUN_LINE = readme_run_line()


def installed(command: str) -> Path:
    path = BIN / command
    if not path.exists() or shutil.which("uv", path=str(BIN)) is None:
        reason = f"{command} or uv is not installed (pip install -e environments/bird_sql)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def run(line: str, workdir: Path, streams: bool = True, **env: str) -> dict[str, dict[str, Any]]:
    """`line` run from `workdir` against the scripted model (one that ignores `stream: true`
    unless `streams`); each task's trace by name."""
    with ScriptedServer(bird_layout.respond, streams=streams) as server:
        command, *args = line.format(url=server.url).split()
        environment = {k: v for k, v in os.environ.items() if not k.startswith("BIRD_")}
        environment.update(env, BIRD_TEST_KEY="x", PATH=f"{BIN}:{os.environ['PATH']}")
        done = subprocess.run(
            [str(installed(command)), *args], cwd=workdir, env=environment,
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        streamed = [body.get("stream") for body in server.requests]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    if streams:
        assert streamed and all(streamed)  # the chat program streams: the SSE path was served
    else:  # vf-run's probe streamed; the relay sent every task's request on without it
        assert streamed[0] and streamed[1:] and not any(streamed[1:])
    return traces_by_name(workdir)


def assert_scored(traces: dict[str, dict[str, Any]], names: list[str]) -> None:
    assert sorted(traces) == names
    for name in names:
        match, error = bird_layout.EXPECTED[name]
        trace = traces[name]
        assert reward(trace) == match, (name, trace.get("errors"))
        assert trace["metrics"] == {"error": error, "trivial": 0.0, "gold_error": 0.0}


@pytest.mark.slow
def test_readme_run_line_with_data_dir(tmp_path: Path) -> None:
    folder = bird_layout.bird_dev(tmp_path / "bird")
    line = RUN_LINE + f" --env.taskset.data-dir {folder}"
    assert_scored(run(line, tmp_path), ["0", "1", "2"])


@pytest.mark.slow
def test_readme_run_line_against_an_endpoint_that_does_not_stream(tmp_path: Path) -> None:
    # every task failed with "upstream stream ended before its terminal event", exit 0
    folder = bird_layout.bird_dev(tmp_path / "bird")
    line = RUN_LINE + f" --env.taskset.data-dir {folder}"
    assert_scored(run(line, tmp_path, streams=False), ["0", "1", "2"])


@pytest.mark.slow
def test_vf_eval_with_bird_dir_and_num_tasks(tmp_path: Path) -> None:
    folder = bird_layout.bird_dev(tmp_path / "bird", nested=False)
    line = RUN_LINE.replace("vf-run", "vf-eval", 1) + " --no-push --env.taskset.num-tasks 2"
    assert_scored(run(line, tmp_path, BIRD_DIR=str(folder)), ["0", "1"])


@pytest.mark.slow
def test_train_split_builds_and_applies_the_skip_list(tmp_path: Path) -> None:
    folder = bird_layout.bird_train(tmp_path / "bird")
    line = RUN_LINE + " --env.taskset.split train"
    traces = run(line, tmp_path, BIRD_TRAIN_DIR=str(folder))
    assert_scored(traces, ["0", "2"])  # question 1's gold fails: left out
    [listing] = (folder / "train").glob("train_gold_failures-sqlite*.txt")
    assert [line.split("#")[0].strip() for line in listing.read_text().splitlines()
            if not line.startswith("#")] == ["1"]  # fmt: skip
