"""One rule for "can run here": `data status`, `tasks list`, `run`, `eval` and `context` give
the same tasks and the same count, and `--runnable` selects exactly those."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from urllib.parse import quote

import pytest
from typer.testing import CliRunner

from querybench.cli import app
from querybench.data.status import benchmark_status
from querybench.runs.config import RunConfig, Selection
from querybench.runs.layout import select_tasks
from querybench.tasks import load_tasks
from querybench.tasks.runnable import runnability
from tests.conftest import as_new_user, require_data

runner = CliRunner()


@pytest.fixture
def shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shared data as the only data with content; no user data, no credentials."""
    root = require_data("spider2", "spider2-lite", "spider2-lite.jsonl").parents[2]
    as_new_user(monkeypatch, tmp_path, root)
    return root


def _runnable_here(output: str) -> int:
    """The n of the summary's `runnable here` row (the table's second cell)."""
    row = next(line for line in output.splitlines() if "runnable here" in line and "│" in line)
    return int(row.split("│")[2])


def test_spider2_lite_counts_agree_everywhere(shared: Path, tmp_path: Path) -> None:
    status = benchmark_status("spider2-lite")
    tasks = load_tasks("spider2-lite", with_gold=False)
    split = runnability(tasks)
    assert status.runnable == len(split.runnable) == 29  # as of this copy of the data
    # eval in sql mode counted a cloud task with no prediction as runnable (530 of 547)
    sqls = tmp_path / "sqls"
    sqls.mkdir()
    first = split.runnable[0].instance_id
    (sqls / f"{first}.sql").write_text("SELECT 1\n", encoding="utf-8")
    args = ["eval", "spider2-lite", "--predictions", str(sqls), "--mode", "sql"]
    result = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert _runnable_here(result.output) == status.runnable
    # tasks list --runnable lists exactly those
    listed = runner.invoke(
        app, ["tasks", "list", "spider2-lite", "--runnable", "--format", "jsonl"]
    )
    assert listed.exit_code == 0, listed.output
    ids = [json.loads(line)["instance_id"] for line in listed.stdout.splitlines()]
    assert ids == [t.instance_id for t in split.runnable]
    # run: a task with no schema metadata (ga360) is engine_unavailable up front, not sent to
    # the model to fail as context_error
    config = RunConfig(
        "spider2-lite", "dail-sql", "oracle", tmp_path / "run", selection=Selection(limit=10)
    )
    selected, unavailable = select_tasks(config)
    expected = {t.instance_id for t in runnability(selected).runnable}
    assert {t.instance_id for t in selected} - set(unavailable) == expected
    no_metadata = [t for t in selected if not t.extra.get("metadata_dir")]
    assert no_metadata and all(
        "no schema metadata" in unavailable[t.instance_id] for t in no_metadata
    )
    # --runnable on eval scores only them
    only = runner.invoke(app, [*args, "--runnable"], env={"COLUMNS": "200"})
    assert only.exit_code == 0, only.output
    assert f"│ all tasks │ {status.runnable} │" in only.output.replace("  ", " ").replace("  ", " ")


def test_context_runnable(shared: Path) -> None:
    split = runnability(load_tasks("spider2-lite", with_gold=False))
    result = runner.invoke(app, ["context", "spider2-lite", "--runnable", "--budget", "1500"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["instance_id"] for line in lines] == [t.instance_id for t in split.runnable]
    blocked = next(iter(split.blocked))
    refused = runner.invoke(app, ["context", "spider2-lite", blocked, "--runnable"])
    assert refused.exit_code == 2
    assert f"{blocked} cannot run here: {split.blocked[blocked].message}" in refused.output


def _shop(folder: Path) -> None:
    """`folder/shop/shop.sqlite` with a table t of two rows."""
    db = folder / "shop" / "shop.sqlite"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2);")
    con.commit()
    con.close()


@pytest.fixture
def spider1_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data root with Spider 1.0's dev.json, dev_gold.sql and one of its two databases."""
    root = tmp_path / "data"
    _shop(root / "spider1" / "database")
    entries = [
        {"db_id": "shop", "query": "SELECT count(*) FROM t", "question": "How many?"},
        {"db_id": "gone", "query": "SELECT 1", "question": "No database?"},
        {"db_id": "shop", "query": "SELECT max(x) FROM t", "question": "Largest?"},
    ]
    (root / "spider1" / "dev.json").write_text(json.dumps(entries), encoding="utf-8")
    gold = "".join(f"{e['query']}\t{e['db_id']}\n" for e in entries)
    (root / "spider1" / "dev_gold.sql").write_text(gold, encoding="utf-8")
    as_new_user(monkeypatch, tmp_path, root)
    return root


def test_eval_spider1_finds_gold_and_databases_in_the_data(
    spider1_data: Path, tmp_path: Path
) -> None:
    pred = tmp_path / "pred.txt"
    pred.write_text("SELECT count(*) FROM t\nSELECT 1\nSELECT 0\n", encoding="utf-8")
    out = tmp_path / "scores.jsonl"
    result = runner.invoke(
        app, ["eval", "spider1", "--predictions", str(pred), "--output", str(out)]
    )
    assert result.exit_code == 0, result.output
    scores = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(s["score"], s["error"]) for s in scores] == [
        (1.0, None),
        (0.0, "engine_unavailable"),
        (0.0, "wrong_result"),
    ]
    assert benchmark_status("spider1").runnable == 2 == _runnable_here(result.output)
    # --runnable: only the two whose database is here
    only = runner.invoke(
        app, ["eval", "spider1", "--predictions", str(pred), "--runnable", "--output", str(out)]
    )
    assert only.exit_code == 0, only.output
    assert [json.loads(line)["instance_id"] for line in out.read_text().splitlines()] == ["0", "2"]
    # a flag still overrides: another gold file
    other = tmp_path / "other_gold.sql"
    other.write_text("SELECT min(x) FROM t\tshop\n", encoding="utf-8")
    one = tmp_path / "one.txt"
    one.write_text("SELECT min(x) FROM t\n", encoding="utf-8")
    flagged = runner.invoke(
        app,
        ["eval", "spider1", "--predictions", str(one), "--gold", str(other), "--output", str(out)],
    )
    assert flagged.exit_code == 0, flagged.output
    assert [json.loads(line)["score"] for line in out.read_text().splitlines()] == [1.0]


def test_eval_bird_finds_questions_and_databases_in_the_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data"
    _shop(root / "bird" / "dev_databases")
    questions = [
        {"question_id": 0, "db_id": "shop", "question": "n?", "SQL": "SELECT count(*) FROM t"},
        {"question_id": 1, "db_id": "gone", "question": "?", "SQL": "SELECT 1"},
    ]
    (root / "bird" / "dev.json").write_text(json.dumps(questions), encoding="utf-8")
    as_new_user(monkeypatch, tmp_path, root)
    pred = tmp_path / "predict_dev.json"
    pred.write_text(
        json.dumps({"0": "SELECT count(*) FROM t\t----- bird -----\tshop"}), encoding="utf-8"
    )
    out = tmp_path / "scores.jsonl"
    result = runner.invoke(app, ["eval", "bird", "--predictions", str(pred), "--output", str(out)])
    assert result.exit_code == 0, result.output
    scores = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(s["score"], s["error"]) for s in scores] == [(1.0, None), (0.0, "engine_unavailable")]
    assert benchmark_status("bird").runnable == 1


def test_a_missing_gold_names_querybench_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import querybench.data.roots as data

    as_new_user(monkeypatch, tmp_path, tmp_path / "empty")
    monkeypatch.setattr(data, "shared_data_dir", lambda: None)  # an installed tool's roots
    pred = tmp_path / "pred.txt"
    pred.write_text("SELECT 1\n", encoding="utf-8")
    for benchmark in ("spider1", "bird", "spider2-lite"):
        given = tmp_path if benchmark == "spider2-lite" else pred
        result = runner.invoke(app, ["eval", benchmark, "--predictions", str(given)])
        assert result.exit_code == 2, result.output
        said = " ".join(result.output.split())
        assert "QUERYBENCH_DATA" in said and f"querybench data fetch {benchmark}" in said, said


def test_an_installed_package_has_no_shared_data_root(tmp_path: Path) -> None:
    """In a non-editable install `../shared/data` beside the package is `site-packages/..`'s,
    no checkout's: that root is not searched there."""
    import importlib.util

    import querybench.data.roots as data

    assert data.shared_data_dir() is not None  # this checkout has one
    site = tmp_path / "lib" / "python3" / "site-packages" / "querybench"
    site.mkdir(parents=True)
    (site / "data.py").write_text(Path(data.__file__).read_text(encoding="utf-8"))
    spec = importlib.util.spec_from_file_location("installed_data", site / "data.py")
    assert spec is not None and spec.loader is not None
    installed = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(installed)
    assert installed.shared_data_dir() is None
    assert "../shared/data" not in [label for label, _ in installed.labelled_roots()]


def test_run_says_what_cannot_run_and_runnable_leaves_it_out(
    spider1_data: Path, tmp_path: Path
) -> None:
    args = ["run", "spider1", "--model", "oracle", "--out"]
    result = runner.invoke(app, [*args, str(tmp_path / "all")], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    line = (
        "data: spider1: 2 of 3 tasks can run here; 1 of 3 local tasks lack their database "
        "(fix: querybench data fetch spider1); --runnable runs only the 2 that can"
    )
    assert line in result.output
    assert result.output.index(line) < result.output.index("score ")
    summary = json.loads((tmp_path / "all" / "summary.json").read_text())
    assert (summary["n"], summary["runnable"]) == (3, 2)
    only = runner.invoke(app, [*args, str(tmp_path / "only"), "--runnable"])
    assert only.exit_code == 0, only.output
    assert "can run here" not in only.output  # every selected task can
    summary = json.loads((tmp_path / "only" / "summary.json").read_text())
    assert (summary["n"], summary["runnable"], summary["correct"]) == (2, 2, 2)


def test_data_status_counts_the_agentic_gold_eval_scores(shared: Path, tmp_path: Path) -> None:
    # data status said 560 agentic golds here, eval spider2 559 (bq018: gold SQL, no result.csv)
    import querybench

    require_data("spider2", "spider2", "evaluation_suite", "gold")
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "results_metadata.jsonl").write_text("", encoding="utf-8")
    results = querybench.evaluate("spider2", submission)
    here = sum(bool(r.metrics.get("has_gold")) for r in results)
    items = {i.what: i.state for i in benchmark_status("spider2").items}
    assert items["gold"].startswith(f"{here} of {len(results)} tasks")


def test_eval_spider2_runnable_scores_the_tasks_data_status_counts(
    shared: Path, tmp_path: Path
) -> None:
    require_data("spider2", "spider2", "evaluation_suite", "gold")
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "results_metadata.jsonl").write_text("", encoding="utf-8")
    out = tmp_path / "scores.jsonl"
    args = ["eval", "spider2", "--predictions", str(submission), "--output", str(out)]
    result = runner.invoke(app, [*args, "--runnable"])
    assert result.exit_code == 0, result.output
    ids = [json.loads(line)["instance_id"] for line in out.read_text().splitlines()]
    expected = runnability(load_tasks("spider2", with_gold=False)).runnable
    assert ids == [t.instance_id for t in expected]
    assert len(ids) == benchmark_status("spider2").runnable


def test_report_counts_runnable_here_by_the_same_rule(shared: Path, tmp_path: Path) -> None:
    """`report` counted every task without an engine_unavailable verdict (547 of an exec_result
    eval that submitted nothing); it applies the rule, as `data status` does."""
    status = benchmark_status("spider2-lite")
    empty = tmp_path / "csvs"
    empty.mkdir()
    out = tmp_path / "scores.jsonl"
    scored = runner.invoke(
        app, ["eval", "spider2-lite", "--predictions", str(empty), "--output", str(out)]
    )
    assert scored.exit_code == 0, scored.output
    report = runner.invoke(
        app, ["report", str(out), "--benchmark", "spider2-lite"], env={"COLUMNS": "200"}
    )
    assert report.exit_code == 0, report.output
    row = next(line for line in report.output.splitlines() if "│ runnable here" in line)
    assert [c.strip() for c in row.split("│") if c.strip()] == ["runnable here", "29"]
    assert status.runnable == 29


def _bigquery_key(folder: Path) -> Path:
    """A service-account key file shaped as Google issues them, with a key that does not
    parse: the client fails at once, offline, and says why."""
    key = folder / "key.json"
    fields = {
        "type": "service_account",
        "project_id": "my-billing-project",
        "private_key_id": "0123abcd",
        "private_key": "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n",
        "client_email": "scorer@my-billing-project.iam.gserviceaccount.com",
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    key.write_text(json.dumps(fields), encoding="utf-8")
    return key


def test_credentials_make_the_cloud_tasks_with_metadata_runnable(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no emulation built, a cloud task with schema metadata runs on the warehouse itself
    when its credentials are here: every count says so, and so does the target."""
    from querybench.tasks.databases import task_target

    tasks = load_tasks("spider2-lite", with_gold=False)
    before = runnability(tasks)
    cloud = [t for t in tasks if t.engine in ("bigquery", "snowflake")]
    with_metadata = {t.instance_id for t in cloud if t.extra.get("metadata_dir")}
    assert with_metadata and not with_metadata & {t.instance_id for t in before.runnable}
    for name, value in (("ACCOUNT", "AB12345"), ("USER", "alice"), ("PASSWORD", "pat-token")):
        monkeypatch.setenv(f"SNOWFLAKE_{name}", value)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(_bigquery_key(tmp_path)))
    after = runnability(tasks)
    gained = {t.instance_id for t in after.runnable} - {t.instance_id for t in before.runnable}
    assert gained == with_metadata
    status = benchmark_status("spider2-lite")
    assert status.runnable == len(after.runnable)
    found = next(i for i in status.items if i.what == "Snowflake credentials")
    assert found.state.startswith("found: SNOWFLAKE_* variables")
    assert "on the warehouse itself" in found.state
    bq = next(t for t in cloud if t.engine == "bigquery" and t.instance_id in gained)
    sf = next(t for t in cloud if t.engine == "snowflake" and t.instance_id in gained)
    key = quote(str((tmp_path / "key.json").resolve()), safe="")
    assert task_target(bq) == f"bigquery://my-billing-project?credentials={key}"
    assert task_target(sf) == f"snowflake:///{sf.db}"


def test_sql_mode_runs_a_cloud_task_on_the_warehouse_its_credentials_name(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`eval --mode sql` opens the warehouse for a cloud task with no emulation: with a key
    that cannot sign, that one task fails as engine_unavailable with the client's words, and
    the task without credentials says what is missing."""
    tasks = load_tasks("spider2-lite", with_gold=False)
    bq = next(t for t in tasks if t.engine == "bigquery" and t.extra.get("metadata_dir"))
    sf = next(t for t in tasks if t.engine == "snowflake" and t.extra.get("metadata_dir"))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(_bigquery_key(tmp_path)))
    sqls = tmp_path / "sqls"
    sqls.mkdir()
    for task in (bq, sf):
        (sqls / f"{task.instance_id}.sql").write_text("SELECT 1\n", encoding="utf-8")
    out = tmp_path / "scores.jsonl"
    args = ["eval", "spider2-lite", "--predictions", str(sqls), "--mode", "sql"]
    result = runner.invoke(app, [*args, "--output", str(out)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = {s["instance_id"]: s for s in map(json.loads, out.read_text().splitlines())}
    assert lines[bq.instance_id]["error"] == "engine_unavailable"
    assert "cannot create a BigQuery client" in lines[bq.instance_id]["message"]
    assert lines[sf.instance_id]["error"] == "engine_unavailable"
    assert "no Snowflake credentials" in lines[sf.instance_id]["message"]
