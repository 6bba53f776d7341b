"""`--executor ray` against the local executor on real Spider 1.0 data: the same per-instance
scores for `run` and `eval`, resumption of a partial run folder, the cap on work in flight,
and a clear error without Ray. One local Ray (2 CPUs, no dashboard) serves the whole module."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from querybench.cli import app
from querybench.data.roots import data_root
from querybench.runs.config import Cache, Endpoint, Execution, RunConfig, Selection
from querybench.runs.runner import run
from querybench.runs.store import InstanceRecord, RecordStore
from tests.conftest import require_data

pytestmark = [pytest.mark.slow, pytest.mark.data]


class Injected(Exception):
    """A failure injected mid-run, standing in for Ctrl-C."""


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    ray = pytest.importorskip("ray")
    require_data("spider1", "dev.json")
    cache = tmp_path_factory.mktemp("cache")
    patch = pytest.MonkeyPatch()
    patch.setenv("QUERYBENCH_CACHE", str(cache))  # set before the workers start: they inherit it
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()
    patch.undo()


def _config(out: Path, executor: str, limit: int = 40) -> RunConfig:
    return RunConfig(
        "spider1",
        "zero-shot",
        "oracle",
        out=out,
        execution=Execution(workers=4, executor=executor),
        selection=Selection(limit=limit),
    )


def _results(path: Path) -> dict[str, dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return {r["instance_id"]: r for r in map(json.loads, lines)}


def _flat(text: str) -> str:
    return " ".join(text.split())


def _attempted(run_dir: Path) -> list[int]:
    lines = (run_dir / "sessions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["attempted"] for line in lines]


def test_run_on_ray_scores_each_instance_as_local(ray_cluster: None, tmp_path: Path) -> None:
    local = run(_config(tmp_path / "local", "local"))
    remote = run(_config(tmp_path / "ray", "ray"))
    assert len(remote.tasks) == 40 and remote.complete
    scores = _results(tmp_path / "ray" / "results.jsonl")
    assert scores == _results(tmp_path / "local" / "results.jsonl")
    assert remote.summary["correct"] == local.summary["correct"] == 40
    pred = (tmp_path / "ray" / "pred.txt").read_text(encoding="utf-8")
    assert pred == (tmp_path / "local" / "pred.txt").read_text(encoding="utf-8")
    assert json.loads((tmp_path / "ray" / "config.json").read_text())["executor"] == "ray"


def test_ray_resumes_a_partial_run_doing_only_the_missing(
    ray_cluster: None, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    run(_config(out, "local", limit=10))  # a partial store left by the local executor
    seen: list[str] = []

    def stop_after_five(record: InstanceRecord) -> None:
        seen.append(record.instance_id)
        if len(seen) == 5:
            raise Injected("interrupted")

    with pytest.raises(Injected):
        run(_config(out, "ray", limit=25), on_record=stop_after_five)
    partial = len(RecordStore(out).load())
    assert partial == 15  # only the driver writes: what came back before the stop
    outcome = run(_config(out, "ray"))
    assert outcome.complete and outcome.summary["correct"] == 40
    ids = Counter(
        json.loads(line)["instance_id"]
        for line in (out / "records.jsonl").read_text(encoding="utf-8").splitlines()
    )
    assert len(ids) == 40 and set(ids.values()) == {1}  # every instance exactly once
    assert _attempted(out)[-2] == 40 - partial  # the last line is the scoring's


def test_capped_keeps_each_kind_under_its_cap(ray_cluster: None) -> None:
    import ray

    from querybench.runs.ray_executor import capped

    @ray.remote(num_cpus=0)
    def echo(x: int) -> int:
        return x

    items = list(range(30))
    busy: Counter[str] = Counter()
    peak: Counter[str] = Counter()

    def kind(x: int) -> str:
        return "a" if x % 3 else "b"

    def submit(x: int) -> Any:
        busy[kind(x)] += 1
        peak[kind(x)] = max(peak[kind(x)], busy[kind(x)])
        return echo.remote(x)

    done = []
    for x, value in capped(items, kind, 2, submit):
        busy[kind(x)] -= 1
        done.append(value)
    assert sorted(done) == items and peak == {"a": 2, "b": 2}


def test_eval_spider1_on_ray_scores_each_line_as_local(ray_cluster: None, tmp_path: Path) -> None:
    spider1 = data_root() / "spider1"
    gold_lines = (spider1 / "dev_gold.sql").read_text(encoding="utf-8").splitlines()[:120]
    gold = tmp_path / "gold.sql"
    gold.write_text("\n".join(gold_lines) + "\n", encoding="utf-8")
    pred = tmp_path / "pred.txt"  # every third prediction wrong, one line missing at the end
    pred.write_text(
        "".join(
            ("SELECT 1" if i % 3 == 0 else line.split("\t")[0]) + "\n"
            for i, line in enumerate(gold_lines[:-1])
        ),
        encoding="utf-8",
    )
    outputs = {}
    for executor in ("local", "ray"):
        outputs[executor] = tmp_path / f"{executor}.jsonl"
        args = ["eval", "spider1", "--gold", str(gold), "--predictions", str(pred)]
        args += ["--db-dir", str(spider1), "--executor", executor]
        result = CliRunner().invoke(app, [*args, "--output", str(outputs[executor])])
        assert result.exit_code == 0, result.output
    local, remote = _results(outputs["local"]), _results(outputs["ray"])
    assert remote == local and len(local) == 120
    assert 0 < sum(r["score"] for r in local.values()) < 120
    assert local["119"]["error"] == "missing_prediction"


def test_eval_spider2_lite_on_ray_scores_as_local(ray_cluster: None, tmp_path: Path) -> None:
    suite = require_data("spider2", "spider2-lite", "evaluation_suite")
    outputs = {}
    for executor in ("local", "ray"):
        outputs[executor] = tmp_path / f"{executor}.jsonl"
        args = ["eval", "spider2-lite", "--predictions"]
        args += [str(suite / "example_submission_folder_csv"), "--executor", executor]
        result = CliRunner().invoke(app, [*args, "--output", str(outputs[executor])])
        assert result.exit_code == 0, result.output
    local = _results(outputs["local"])
    assert _results(outputs["ray"]) == local and len(local) > 500


def test_without_ray_the_error_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from querybench.errors import RayUnavailable

    require_data("spider1", "dev.json")
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(RayUnavailable, match=r"pip install 'querybench\[ray\]'"):
        run(_config(tmp_path / "run", "ray"))
    assert not (tmp_path / "run").exists()  # refused before anything is written
    args = ["run", "spider1", "--model", "oracle", "--limit", "2", "--executor", "ray"]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "cli")])
    assert result.exit_code == 2 and "pip install 'querybench[ray]'" in _flat(result.output)
    gold = data_root() / "spider1" / "dev_gold.sql"
    args = ["eval", "spider1", "--gold", str(gold), "--predictions", str(gold)]
    result = CliRunner().invoke(app, [*args, "--db-dir", str(gold.parent), "--executor", "ray"])
    assert result.exit_code == 2 and "pip install 'querybench[ray]'" in _flat(result.output)
    result = CliRunner().invoke(app, [*args, "--db-dir", str(gold.parent), "--executor", "dask"])
    assert result.exit_code == 2 and "local or ray" in _flat(result.output)


def test_an_address_nobody_answers_fails_fast() -> None:
    import socket

    from querybench.errors import QuerybenchError
    from querybench.runs.ray_executor import _check_reachable

    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(QuerybenchError, match="no Ray cluster answers"):
        _check_reachable(f"ray://127.0.0.1:{port}")
    _check_reachable("auto")  # left to Ray


def test_request_budget_is_shared_by_the_actors_then_resume(
    ray_cluster: None, tmp_path: Path
) -> None:
    """An endpoint model built on the workers: `--max-requests 2` over the whole cluster (two
    actors, one request each), the run stops early, and a resume finishes the rest."""
    from tests.openai_server import Reply, ScriptedServer

    out = tmp_path / "run"

    def config(max_requests: int | None = None) -> RunConfig:
        return RunConfig(
            "spider1",
            "zero-shot",
            "scripted",
            out=out,
            selection=Selection(limit=6),
            execution=Execution(workers=4, executor="ray", max_requests=max_requests),
            endpoint=Endpoint(base_url=server.url),
            cache=Cache(use_cache=False),
        )

    with ScriptedServer(default=Reply("```sql\nSELECT 1\n```")) as server:
        first = run(config(max_requests=2))
        assert first.stopped and "budget" in first.stopped and not first.complete
        assert len(server.requests) == 2 and first.summary["finished"] == 2
        second = run(config())
        assert second.complete and len(server.requests) == 6
    assert len((out / "records.jsonl").read_text().splitlines()) == 6


def test_evaluate_api_on_ray_scores_bird_as_local(ray_cluster: None, tmp_path: Path) -> None:
    """`querybench.evaluate(..., executor="ray")`: the same evaluator in shards, the results in
    the local order, `on_result` once per instance with the results returned."""
    import sqlite3

    import querybench
    from querybench.evaluation.bird.evaluate import BIRD_SEPARATOR

    db = tmp_path / "db" / "shop" / "shop.sqlite"
    db.parent.mkdir(parents=True)
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE item (id INTEGER, name TEXT)")
        conn.executemany("INSERT INTO item VALUES (?, ?)", [(i, f"n{i % 7}") for i in range(50)])
    conn.close()
    n = 70  # three shards
    questions = tmp_path / "dev.json"
    entries = [{"db_id": "shop", "SQL": f"SELECT name FROM item WHERE id < {i}"} for i in range(n)]
    questions.write_text(json.dumps(entries), encoding="utf-8")
    predictions = tmp_path / "predict.json"
    sqls = {
        str(i): f"SELECT name FROM item WHERE id < {i + i % 2}{BIRD_SEPARATOR}shop"
        for i in range(n - 1)  # the last question has no prediction
    }
    predictions.write_text(json.dumps(sqls), encoding="utf-8")
    options: dict[str, Any] = {"questions": questions, "db_dir": tmp_path / "db", "workers": 2}
    local = querybench.evaluate("bird", predictions, **options)
    seen: list[Any] = []
    remote = querybench.evaluate(
        "bird", predictions, executor="ray", on_result=seen.append, **options
    )
    assert remote == local and len(local) == n
    assert sorted(seen, key=lambda r: int(r.instance_id)) == remote
    assert 0 < sum(r.score for r in local) < n and local[-1].error == "missing_prediction"


@pytest.mark.parametrize("address", ["x", "ray:/x", "host:port", ":10001"])
def test_a_malformed_address_is_one_line_naming_the_flag(tmp_path: Path, address: str) -> None:
    pytest.importorskip("ray")
    require_data("spider1", "dev.json")
    args = ["run", "spider1", "--model", "oracle", "--limit", "2", "--executor", "ray"]
    result = CliRunner().invoke(app, [*args, "--address", address, "--out", str(tmp_path / "r")])
    expected = f"--address must be auto, host:port or ray://host:port, not {address!r}"
    assert result.exit_code == 2 and expected in _flat(result.output), result.output
    assert not (tmp_path / "r").exists()  # refused before anything is written
    gold = data_root() / "spider1" / "dev_gold.sql"
    args = ["eval", "spider1", "--gold", str(gold), "--predictions", str(gold)]
    args += ["--db-dir", str(gold.parent), "--executor", "ray", "--address", address]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and expected in _flat(result.output), result.output


def test_an_address_without_the_ray_executor_is_refused(tmp_path: Path) -> None:
    require_data("spider1", "dev.json")
    gold = data_root() / "spider1" / "dev_gold.sql"
    args = ["eval", "spider1", "--gold", str(gold), "--predictions", str(gold)]
    result = CliRunner().invoke(app, [*args, "--db-dir", str(gold.parent), "--address", "auto"])
    assert result.exit_code == 2 and "--address needs --executor ray" in _flat(result.output)
    args = ["run", "spider1", "--model", "oracle", "--limit", "2", "--address", "auto"]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "--address needs --executor ray" in _flat(result.output)


@pytest.mark.parametrize(
    "address", ["auto", "10.0.0.1:6379", "head.example:6379", "ray://head:10001", "ray://[::1]"]
)
def test_the_address_forms_ray_reads_are_let_through(address: str) -> None:
    pytest.importorskip("ray")
    from querybench.runs.ray_executor import check_executor

    check_executor("ray", address)
