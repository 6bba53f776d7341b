"""The bird-sql taskset: BIRD layouts, the prompt, train's skip list, errors, scoring, workers."""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

vf = pytest.importorskip("verifiers.v1")

from querybench.envs import bird_data, skiplist  # noqa: E402
from querybench.envs.bird_sql import BirdSQLTask, bird_sql_task_data, load_environment  # noqa: E402
from querybench.envs.reward import cgroup_cpu_quota, sql_workers, usable_cores  # noqa: E402
from querybench.envs.vf_run import eval_arguments  # noqa: E402
from querybench.errors import DataError  # noqa: E402
from tests import bird_layout  # noqa: E402
from tests.conftest import require_data  # noqa: E402
from tests.methods_fixture import check_golden  # noqa: E402
from tests.openai_server import ScriptedServer  # noqa: E402

README = Path(__file__).parent.parent / "environments" / "bird_sql" / "README.md"


@pytest.fixture(autouse=True)
def no_bird_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("BIRD_DIR", "BIRD_TRAIN_DIR", "BIRD_SQL_WORKERS", "QUERYBENCH_SQL_WORKERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))


def names(data: list[Any]) -> list[str]:
    return [d.name for d in data]


@pytest.mark.parametrize("nested", [True, False])
def test_both_dev_layouts_by_flag_and_by_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nested: bool
) -> None:
    folder = bird_layout.bird_dev(tmp_path, nested=nested)
    data = bird_sql_task_data("dev", folder)
    assert names(data) == ["0", "1", "2"] and data[0].id == "bird-dev/0"
    assert Path(data[0].database).name == "concert_singer.sqlite"
    monkeypatch.setenv("BIRD_DIR", str(folder))
    assert names(bird_sql_task_data("dev", num_tasks=2)) == ["0", "1"]
    # the parent of dev_20240627/ works too
    assert names(bird_sql_task_data("dev", tmp_path)) == ["0", "1", "2"]


def test_the_prompt_is_the_schema_then_evidence_then_question(tmp_path: Path) -> None:
    data = bird_sql_task_data("dev", bird_layout.bird_dev(tmp_path))
    assert data[0].system_prompt is None
    check_golden("bird_sql_prompt.txt", f"{data[1].prompt}\n=== no evidence ===\n{data[0].prompt}")
    assert "Evidence:" not in data[0].prompt and "older than 30 refers to" in data[1].prompt


def test_the_readme_shows_the_exact_prompt() -> None:
    text = README.read_text()
    [template] = re.findall(r"<!-- prompt -->\n```text\n(.*?)\n```", text, re.DOTALL)
    assert template == bird_data.PROMPT.replace("{evidence}", bird_data.EVIDENCE.format(
        evidence="{evidence}"))  # fmt: skip


def test_train_uses_positions_and_builds_the_skip_list_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = bird_layout.bird_train(tmp_path)
    monkeypatch.setenv("BIRD_SQL_WORKERS", "2")
    taskset = load_environment(split="train", data_dir=folder, num_tasks=5)
    assert names([task.data for task in taskset.load()]) == ["0", "2"]
    assert "1 of 3 BIRD train gold queries fail" in capsys.readouterr().err
    train_json = folder / "train" / "train.json"
    beside, _ = skiplist.skip_list_paths(train_json)
    assert skiplist.read_skip_list(beside) == {"1"} and "no_such_column" in beside.read_text()

    def must_not_run(*args: object, **kwargs: object) -> dict[str, str]:
        raise AssertionError("the golds ran again")

    monkeypatch.setattr(skiplist, "failing_golds", must_not_run)
    assert names(bird_sql_task_data("train", folder, num_tasks=1)) == ["0"]
    # another train.json is another list
    entries = json.loads(train_json.read_text())
    train_json.write_text(json.dumps(entries[:2]))
    assert skiplist.skip_list_paths(train_json)[0] != beside
    with pytest.raises(AssertionError, match="ran again"):
        bird_sql_task_data("train", folder)


def test_the_skiplist_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = bird_layout.bird_train(tmp_path)
    assert skiplist.main(["--data", str(folder), "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "1 of 3 gold queries failed" in out
    [written] = (folder / "train").glob("train_gold_failures-sqlite*.txt")
    assert str(written) in out and skiplist.read_skip_list(written) == {"1"}
    with pytest.raises(SystemExit) as exit_info:
        skiplist.main(["--data", str(tmp_path / "nowhere")])
    assert exit_info.value.code == 2
    assert "nowhere/train.json" in capsys.readouterr().err


def test_nothing_to_load_is_an_error_naming_the_path(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=re.escape(str(tmp_path / "dev_20240627" / "dev.json"))):
        bird_sql_task_data("dev", tmp_path)
    (tmp_path / "dev.json").write_text("[]")
    with pytest.raises(DataError, match="no BIRD dev questions"):
        bird_sql_task_data("dev", tmp_path)
    question = {"question_id": 3, "db_id": "absent", "question": "?", "SQL": "SELECT 1"}
    (tmp_path / "dev.json").write_text(json.dumps([question]))
    expected = tmp_path / "dev_databases" / "absent" / "absent.sqlite"
    with pytest.raises(DataError, match=re.escape(str(expected))):
        bird_sql_task_data("dev", tmp_path)


def test_scored_on_non_streamed_replies(tmp_path: Path) -> None:
    """The rollout as a harness runs it, with a plain (not streamed) chat completion."""
    tasks: list[BirdSQLTask] = list(load_environment(data_dir=bird_layout.bird_dev(tmp_path)))
    with ScriptedServer(bird_layout.respond) as server:
        for task in tasks:
            body = {"model": "m", "messages": [{"role": "user", "content": task.data.prompt}]}
            reply = httpx.post(f"{server.url}/chat/completions", json=body, timeout=10)
            trace = vf.Trace(
                task=vf.TraceTask(type=type(task).__name__, data=task.data),
                agent=vf.AgentInfo(config=vf.AgentConfig()),
                root_reply=reply.json()["choices"][0]["message"]["content"],
            )
            asyncio.run(task.score(trace))
            match, error = bird_layout.EXPECTED[task.data.name]
            assert trace.rewards["execution_match"].score == match
            assert dict(trace.metrics) == {"error": error, "trivial": 0.0, "gold_error": 0.0}
        assert not any(body.get("stream") for body in server.requests)


def test_workers_bird_name_first_then_the_project_wide_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("QUERYBENCH_SQL_WORKERS", "3")
    assert sql_workers(*skiplist.WORKERS_ENVS) == 3 == sql_workers()
    monkeypatch.setenv("BIRD_SQL_WORKERS", "5")
    assert sql_workers(*skiplist.WORKERS_ENVS) == 5 and sql_workers() == 3
    monkeypatch.setenv("BIRD_SQL_WORKERS", "0")
    with pytest.raises(ValueError, match="BIRD_SQL_WORKERS must be at least 1"):
        sql_workers(*skiplist.WORKERS_ENVS)


def test_cores_follow_the_cgroup_quota(tmp_path: Path) -> None:
    v2 = tmp_path / "v2"
    (v2 / "job" / "step").mkdir(parents=True)
    (v2 / "cpu.max").write_text("max 100000\n")
    (v2 / "job" / "cpu.max").write_text("150000 100000\n")
    (v2 / "job" / "step" / "cpu.max").write_text("max 100000\n")
    cgroup = tmp_path / "cgroup"
    cgroup.write_text("0::/job/step\n")
    assert cgroup_cpu_quota(v2, cgroup) == 1.5
    v1 = tmp_path / "v1"
    (v1 / "cpu,cpuacct").mkdir(parents=True)
    (v1 / "cpu,cpuacct" / "cpu.cfs_quota_us").write_text("300000\n")
    (v1 / "cpu,cpuacct" / "cpu.cfs_period_us").write_text("100000\n")
    cgroup.write_text("4:memory:/x\n2:cpu,cpuacct:/\n")
    assert cgroup_cpu_quota(v1, cgroup) == 3.0
    (v1 / "cpu,cpuacct" / "cpu.cfs_quota_us").write_text("-1\n")
    assert cgroup_cpu_quota(v1, cgroup) is None
    assert cgroup_cpu_quota(tmp_path / "none", tmp_path / "missing") is None
    assert 1 <= usable_cores() <= len(os.sched_getaffinity(0))


def test_vf_run_adds_no_push_unless_push() -> None:
    assert eval_arguments(["bird-sql", "-m", "x"]) == ["bird-sql", "-m", "x", "--no-push"]
    assert eval_arguments(["bird-sql", "--push"]) == ["bird-sql", "--push"]
    assert eval_arguments(["bird-sql", "--no-push"]) == ["bird-sql", "--no-push"]


def test_vf_run_states_a_data_error_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("bird_sql")
    from querybench.envs import vf_run

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BIRD_TEST_KEY", "x")
    with pytest.raises(SystemExit) as exit_info:
        vf_run.main(
            ["bird-sql", "-m", "m", "--client.base-url", "http://127.0.0.1:9/v1",
             "--client.api-key-var", "BIRD_TEST_KEY", "--env.agent.harness.id", "null",
             "--env.agent.runtime.type", "subprocess",
             "--env.taskset.data-dir", str(tmp_path / "nowhere")]
        )  # fmt: skip
    assert exit_info.value.code == 2
    assert f"vf-run: error: no BIRD dev question file: looked for {tmp_path}/nowhere/dev.json" in (
        capsys.readouterr().err
    )


@pytest.mark.data
def test_the_shared_bird_dev_questions_without_databases_say_where_they_looked() -> None:
    folder = require_data("bird")
    data = bird_data.load_questions("dev", bird_data.question_file("dev", folder))
    assert len(data) == 1534 and data[0].instance_id == "0"
    expected = folder / "dev_databases" / "dev_databases" / data[0].db / f"{data[0].db}.sqlite"
    if (folder / data[0].db / f"{data[0].db}.sqlite").is_file():
        pytest.skip("the shared BIRD data now has its databases")
    with pytest.raises(DataError, match=re.escape(str(expected))):
        bird_sql_task_data("dev", folder, num_tasks=3)


def test_the_skip_list_goes_to_the_cache_dir_when_the_data_folder_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = bird_layout.bird_train(tmp_path / "data")
    train_json = folder / "train" / "train.json"
    beside, cached = skiplist.skip_list_paths(train_json)
    assert cached.is_relative_to(tmp_path / "cache" / "bird_sql")
    # a directory where the list's temporary file would go: writing beside the data fails
    (beside.parent / f".{beside.name}.{os.getpid()}").mkdir()
    assert names(bird_sql_task_data("train", folder)) == ["0", "2"]
    assert not beside.exists() and skiplist.read_skip_list(cached) == {"1"}
    assert str(cached) in capsys.readouterr().err
    assert names(bird_sql_task_data("train", folder)) == ["0", "2"]  # read back from the cache


def test_an_endpoint_that_does_not_stream_is_relayed_as_a_stream() -> None:
    # every task failed with "upstream stream ended before its terminal event", exit 0
    from querybench.envs import vf_run
    from querybench.envs.stream_relay import StreamRelay

    with ScriptedServer(streams=False) as plain, ScriptedServer() as streaming:
        args = ["bird-sql", "-m", "m", "--client.base-url", plain.url]
        assert "not an event stream" in str(vf_run.streaming_refused(args))
        assert vf_run.streaming_refused([*args[:4], streaming.url]) is None
        with StreamRelay(plain.url) as relay:
            assert vf_run.streaming_refused([*args[:4], relay.url]) is None
            body = {"model": "m", "messages": [{"role": "user", "content": "q"}], "stream": True}
            reply = httpx.post(f"{relay.url}/chat/completions", json=body, timeout=30)
        assert reply.headers["content-type"].startswith("text/event-stream")
        events = [e for e in reply.text.split("\n\n") if e.startswith("data: ")]
        assert events[-1] == "data: [DONE]"
        first = json.loads(events[0].removeprefix("data: "))
        assert first["choices"][0]["delta"]["content"] == "```sql\nSELECT 1\n```"
        assert not any(r.get("stream") for r in plain.requests[-1:])  # sent on without it
    assert vf_run._with_option(args, "--client.base-url", "X") == [*args[:4], "X"]


def test_the_outputs_vf_run_leaves_in_the_checkout_are_ignored() -> None:
    import shutil
    import subprocess

    root = Path(__file__).resolve().parent.parent
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("not a git checkout")
    ignored = subprocess.run(
        ["git", "-C", str(root), "check-ignore", "-q", "outputs/evals/bird-sql/results.jsonl"]
    )
    assert ignored.returncode == 0  # vf-eval writes ./outputs/: not left untracked
