"""A whole `vf-eval` run of the single-turn environment against the scripted loopback server."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.openai_server import Reply, ScriptedServer
from tests.vf_eval_run import reward, run_vf_eval

pytest.importorskip("querybench_sql")


@pytest.mark.slow
def test_vf_eval_null_harness_scores_scripted_answers(tmp_path: Path) -> None:
    # Questions 0 and 1 ask for the number of singers; question 2 for a listing.
    with ScriptedServer(Reply("Here:\n```sql\nSELECT count(*) FROM singer\n```")) as server:
        traces = run_vf_eval("querybench-sql", server, tmp_path)
    assert [reward(traces[i]) for i in ("0", "1", "2")] == [1.0, 1.0, 0.0]
    assert all(t["metrics"]["error"] == 0.0 and t["metrics"]["gold_error"] == 0.0
               for t in traces.values())  # fmt: skip
