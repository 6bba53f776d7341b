"""A whole `vf-eval` run of the single-turn environment against the scripted loopback server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_data
from tests.openai_server import Reply, ScriptedServer

pytest.importorskip("querybench_sql")


@pytest.mark.slow
def test_vf_eval_null_harness_scores_scripted_answers(tmp_path: Path) -> None:
    require_data("spider1", "concert_singer")
    bin_dir = Path(sys.executable).parent
    vf_eval = bin_dir / "vf-eval"
    if not vf_eval.exists() or shutil.which("uv", path=str(bin_dir)) is None:
        pytest.skip("vf-eval or uv is not installed (pip install -e '.[rl]')")
    # Questions 0 and 1 ask for the number of singers; question 2 for a listing.
    with ScriptedServer(Reply("Here:\n```sql\nSELECT count(*) FROM singer\n```")) as server:
        env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", OPENAI_API_KEY="x")
        done = subprocess.run(
            [
                str(vf_eval),
                "querybench-sql",
                "--env.taskset.benchmark",
                "spider1",
                "--env.taskset.num-tasks",
                "3",
                "-m",
                "scripted",
                "--client.base-url",
                server.url,
                "--no-push",
                "--env.agent.harness.id",
                "null",
                "--env.agent.runtime.type",
                "subprocess",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [traces] = list(tmp_path.glob("outputs/*/traces.jsonl"))
    rewards = {}
    for line in traces.read_text().splitlines():
        record = json.loads(line)
        [trace] = record["traces"]
        rewards[record["task"]["data"]["name"]] = (trace["rewards"], trace["metrics"])
    def score(entry: object) -> float:
        return float(entry["score"] if isinstance(entry, dict) else entry)  # type: ignore[arg-type]

    assert [score(rewards[i][0]["execution_match"]) for i in ("0", "1", "2")] == [1.0, 1.0, 0.0]
    assert all(m["error"] == 0.0 and m["gold_error"] == 0.0 for _, m in rewards.values())
