"""Running `vf-eval` (null harness, subprocess runtime) against a scripted local server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_data
from tests.openai_server import ScriptedServer


def run_vf_eval(taskset: str, server: ScriptedServer, workdir: Path) -> dict[str, dict[str, Any]]:
    """Three Spider 1.0 tasks through `vf-eval <taskset>`; each task's trace, by task name.

    Skips without Spider 1.0 data (fails under CI=true), or without vf-eval and uv."""
    require_data("spider1", "concert_singer")
    bin_dir = Path(sys.executable).parent
    vf_eval = bin_dir / "vf-eval"
    if not vf_eval.exists() or shutil.which("uv", path=str(bin_dir)) is None:
        pytest.skip("vf-eval or uv is not installed (pip install -e '.[rl]')")
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", OPENAI_API_KEY="x")
    done = subprocess.run(
        [str(vf_eval), taskset, "--env.taskset.benchmark", "spider1",
         "--env.taskset.num-tasks", "3", "-m", "scripted", "--client.base-url", server.url,
         "--no-push", "--env.agent.harness.id", "null", "--env.agent.runtime.type", "subprocess"],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return traces_by_name(workdir)


def traces_by_name(workdir: Path) -> dict[str, dict[str, Any]]:
    """The one trace of each task of the run under `workdir/outputs/`, by task name."""
    [traces] = list(workdir.glob("outputs/*/traces.jsonl"))
    by_name: dict[str, dict[str, Any]] = {}
    for line in traces.read_text().splitlines():
        record = json.loads(line)
        [trace] = record["traces"]
        by_name[record["task"]["data"]["name"]] = trace
    return by_name


def reward(trace: dict[str, Any], name: str = "execution_match") -> float:
    entry = trace["rewards"][name]
    return float(entry["score"] if isinstance(entry, dict) else entry)
