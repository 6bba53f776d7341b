"""BigQuery: the offline emulation (metadata -> DuckDB, sqlglot transpilation) and the cloud path's
dry run and cost guard against a local HTTP fake of the REST API."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from querybench.engines import connect
from querybench.engines.bigquery import BigQueryLocalEngine
from querybench.engines.pool import run_one
from querybench.engines.spider2_metadata_load import build_emulation, parse_python_repr
from querybench.errors import CostGuardExceeded, EngineError, QueryRefused, QueryTimeout
from tests.test_engines_conformance import ENDLESS, HOSTILE

EVENT_TYPES = [
    "STRING",
    "INT64",
    "ARRAY<STRUCT<key STRING, value STRUCT<string_value STRING, int_value INT64>>>",
    "STRUCT<country STRING, city STRING>",
    "FLOAT64",
]
EVENT_NAMES = ["event_name", "event_timestamp", "event_params", "geo", "value"]


def _event(name: str, ts: int, page: str, country: str) -> dict[str, Any]:
    # Arrays arrive as numpy's repr, without commas between elements, as in Spider 2.0's files.
    params = (
        f"[{{'key': 'page_title', 'value': {{'string_value': '{page}', 'int_value': None}}}}\n"
        " {'key': 'ga_session_id', 'value': {'string_value': None, 'int_value': 7}}]"
    )
    geo = {"country": country, "city": "x"}
    return {
        "event_name": name,
        "event_timestamp": ts,
        "event_params": params,
        "geo": geo,
        "value": float("nan"),
    }


def write_metadata(root: Path) -> Path:
    """A BigQuery database folder in Spider 2.0's layout: two date shards and one plain table."""
    dataset = root / "shop" / "my-project.analytics"
    dataset.mkdir(parents=True)
    shards = {
        "events_20210101": [
            _event("page_view", 1, "Home", "US"),
            _event("purchase", 2, "Cart", "FR"),
        ],
        "events_20210102": [_event("page_view", 3, "Home", "US")],
    }
    for table, rows in shards.items():
        meta = {
            "table_name": table,
            "column_names": EVENT_NAMES,
            "column_types": EVENT_TYPES,
            "sample_rows": rows,
        }
        (dataset / f"{table}.json").write_text(json.dumps(meta))
    users = {
        "table_name": "users",
        "column_names": ["id", "signup", "tags"],
        "column_types": ["INT64", "DATE", "ARRAY<STRING>"],
        "sample_rows": [
            {"id": 1, "signup": "2021-01-01", "tags": "['a' 'b']"},
            {"id": 2, "signup": "2021-02-01", "tags": "[]"},
        ],
    }
    (dataset / "users.json").write_text(json.dumps(users))
    ddl = (
        'table_name,ddl\nlegacy,"CREATE TABLE `my-project.analytics.legacy` (x INT64, y STRING)"\n'
    )
    (dataset / "DDL.csv").write_text(ddl)
    return root / "shop"


@pytest.fixture(scope="module")
def emulation(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bq")
    out = root / "db" / "shop.duckdb"
    out.parent.mkdir()
    report = build_emulation(write_metadata(root / "meta"), out, "bigquery")
    assert (report.tables, report.rows, report.skipped) == (4, 5, ())
    return out


@pytest.fixture
def engine(emulation: Path) -> Iterator[BigQueryLocalEngine]:
    eng = connect(f"bigquery+local://{emulation}")
    assert isinstance(eng, BigQueryLocalEngine)
    yield eng
    eng.close()


QUERIES = [
    # wildcard table and _TABLE_SUFFIX
    (
        "SELECT _TABLE_SUFFIX AS day, COUNT(*) AS n FROM `my-project.analytics.events_*` "
        "GROUP BY day ORDER BY day",
        [("20210101", 2), ("20210102", 1)],
    ),
    (
        "SELECT COUNT(*) FROM `my-project.analytics.events_*` WHERE _TABLE_SUFFIX >= '20210102'",
        [(1,)],
    ),
    (
        "SELECT COUNT(*) FROM `my-project`.analytics.`events_2021*` e "
        "WHERE e.event_name = 'page_view'",
        [(2,)],
    ),
    # UNNEST of a repeated record, and a correlated UNNEST subquery
    (
        "SELECT p.key, COUNT(*) FROM `my-project.analytics.events_20210101`, "
        "UNNEST(event_params) p GROUP BY 1 ORDER BY 1",
        [("ga_session_id", 2), ("page_title", 2)],
    ),
    (
        "SELECT (SELECT value.string_value FROM UNNEST(event_params) WHERE key = 'page_title') "
        "FROM `my-project.analytics.events_20210102`",
        [("Home",)],
    ),
    # STRUCT fields, ARRAY functions, dates, NaN floats kept
    (
        "SELECT geo.country FROM analytics.events_20210101 ORDER BY event_timestamp",
        [("US",), ("FR",)],
    ),
    ("SELECT id, ARRAY_LENGTH(tags) FROM analytics.users ORDER BY id", [(1, 2), (2, 0)]),
    ("SELECT FORMAT_DATE('%Y%m', signup) FROM analytics.users WHERE id = 2", [("202102",)]),
    ("SELECT COUNT(*) FROM analytics.legacy", [(0,)]),
    ("SELECT IS_NAN(value) FROM analytics.events_20210102", [(True,)]),
]


@pytest.mark.parametrize(("sql", "expected"), QUERIES)
def test_bigquery_sql_runs_on_the_emulation(
    engine: BigQueryLocalEngine, sql: str, expected: list[tuple[Any, ...]]
) -> None:
    assert engine.execute(sql).rows == expected


def test_tables_are_datasets_with_nested_types(engine: BigQueryLocalEngine) -> None:
    tables = {(t.schema, t.name): t for t in engine.tables()}
    assert set(tables) == {
        ("analytics", n) for n in ["events_20210101", "events_20210102", "users", "legacy"]
    }
    types = {c.name: c.type for c in tables["analytics", "events_20210101"].columns}
    assert types["event_params"].startswith("STRUCT(")
    assert types["event_params"].endswith("[]")
    assert types["geo"] == "STRUCT(country VARCHAR, city VARCHAR)"


def test_sample_rows_takes_dataset_dot_table(engine: BigQueryLocalEngine) -> None:
    sample = engine.sample_rows("analytics.users", 1)
    assert sample.columns == ("id", "signup", "tags")
    assert sample.rows[0][0] in (1, 2)
    assert len(sample.rows) == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("['a' 'b']", ["a", "b"]),
        ("[1 2 3]", [1, 2, 3]),
        ("[{'k': 1}\n {'k': nan}]", [{"k": 1}, {"k": None}]),
        ("[]", []),
        ("{'a': [1, 2]}", {"a": [1, 2]}),
        ("not python", None),
    ],
)
def test_numpy_reprs_are_read(text: str, expected: Any) -> None:
    assert parse_python_repr(text) == expected


@pytest.mark.parametrize("sql", [s for s in HOSTILE["duckdb"] if "{elsewhere}" not in s])
def test_hostile_statements_are_refused(
    engine: BigQueryLocalEngine, emulation: Path, sql: str
) -> None:
    before = hashlib.sha256(emulation.read_bytes()).hexdigest()
    with pytest.raises(QueryRefused):
        engine.execute(sql.replace("singer", "analytics.users"))
    assert hashlib.sha256(emulation.read_bytes()).hexdigest() == before


def test_timeout_stops_the_query(engine: BigQueryLocalEngine) -> None:
    start = time.monotonic()
    with pytest.raises(QueryTimeout):
        engine.execute(ENDLESS, timeout=0.5)
    assert time.monotonic() - start < 3.0
    assert engine.execute("SELECT 1").rows == [(1,)]


def test_the_timeout_covers_the_translation(emulation: Path, engine: BigQueryLocalEngine) -> None:
    # sqlglot takes seconds over a long statement before DuckDB's own timeout even starts.
    long_sum = "SELECT " + " + ".join(["1"] * 25_000)
    with pytest.raises(QueryTimeout):
        engine.execute(long_sum, timeout=0.2)
    # On the shared path a translation that would run far past the timeout is killed at it.
    longer_sum = "SELECT " + " + ".join(["1"] * 100_000)  # ~12 s of translation here
    start = time.monotonic()
    outcome = run_one(f"bigquery+local://{emulation}", longer_sum, timeout=1.0)
    assert outcome.error is not None and outcome.error.code == "timeout"
    assert time.monotonic() - start < 1.0 + 10


def test_errors_are_engine_errors(engine: BigQueryLocalEngine) -> None:
    with pytest.raises(EngineError, match="does not exist") as info:
        engine.execute("SELECT * FROM analytics.nope")
    assert type(info.value) is EngineError
    with pytest.raises(QueryRefused):
        engine.execute("SELECT 1; SELECT 2")


@pytest.mark.data
def test_real_ga4_metadata_builds_and_answers(tmp_path: Path) -> None:
    from tests.conftest import require_data

    source = require_data(
        "spider2",
        "spider2-lite",
        "resource",
        "databases",
        "bigquery",
        "ga4",
        "bigquery-public-data.ga4_obfuscated_sample_ecommerce",
    )
    meta = tmp_path / "ga4" / source.name
    meta.mkdir(parents=True)
    for name in ["events_20201101.json", "events_20201102.json"]:
        (meta / name).write_bytes((source / name).read_bytes())
    build_emulation(tmp_path / "ga4", tmp_path / "ga4.duckdb", "bigquery")
    with BigQueryLocalEngine(tmp_path / "ga4.duckdb") as eng:
        rows = eng.execute(
            "SELECT COUNT(DISTINCT user_pseudo_id), COUNTIF(ep.key = 'page_title') FROM "
            "`bigquery-public-data.ga4_obfuscated_sample_ecommerce.events_*`, "
            "UNNEST(event_params) ep WHERE _TABLE_SUFFIX BETWEEN '20201101' AND '20201131'"
        ).rows
    assert rows[0][1] == 10  # every sample event has a page_title parameter


# --- the cloud path, against a local fake of the BigQuery REST API -------------------------


class _FakeBigQuery(BaseHTTPRequestHandler):
    """jobs.insert (dry run and real), getQueryResults, jobs.get: just what `query` needs."""

    estimate = 1000
    statement_type = "SELECT"
    jobs: dict[str, dict[str, Any]] = {}  # noqa: RUF012 - per-class state of the fake

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        config = body["configuration"]
        ref = body.get("jobReference") or {"projectId": "p", "jobId": "j1"}
        stats = {
            "query": {
                "totalBytesProcessed": str(self.estimate),
                "statementType": self.statement_type,
            }
        }
        job = {
            "jobReference": ref,
            "configuration": config,
            "status": {"state": "DONE"},
            "statistics": stats,
        }
        if not config.get("dryRun"):
            stats["query"]["totalBytesBilled"] = str(self.estimate)
            self.jobs[ref["jobId"]] = job
        self._send(job)

    def do_GET(self) -> None:
        job_id = self.path.split("?")[0].rstrip("/").rsplit("/", 1)[1]
        job = self.jobs[job_id]
        if "/queries/" in self.path:
            self._send(
                {
                    "jobReference": job["jobReference"],
                    "jobComplete": True,
                    "totalRows": "2",
                    "schema": {"fields": [{"name": "n", "type": "INTEGER", "mode": "NULLABLE"}]},
                    "rows": [{"f": [{"v": "1"}]}, {"f": [{"v": "2"}]}],
                }
            )
        else:
            self._send(job)


@pytest.fixture
def fake_bigquery() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _FakeBigQuery)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _cloud_engine(endpoint: str, guard: int) -> Any:
    pytest.importorskip("google.cloud.bigquery")
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import bigquery

    from querybench.engines.bigquery import BigQueryEngine

    client = bigquery.Client(
        project="p",
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options=ClientOptions(api_endpoint=endpoint),
    )
    return BigQueryEngine("p", client=client, maximum_bytes_billed=guard)


def test_cloud_query_records_bytes(fake_bigquery: str) -> None:
    _FakeBigQuery.estimate, _FakeBigQuery.statement_type = 1000, "SELECT"
    engine = _cloud_engine(fake_bigquery, guard=10_000)
    result = engine.execute("SELECT n FROM t", timeout=10)
    assert result.rows == [(1,), (2,)]
    assert result.extra["estimated_bytes"] == 1000
    assert result.extra["bytes_processed"] == 1000
    assert result.extra["bytes_billed"] == 1000


def test_cloud_query_over_the_guard_is_refused_with_its_estimate(fake_bigquery: str) -> None:
    _FakeBigQuery.estimate, _FakeBigQuery.statement_type = 5 * 10**12, "SELECT"
    _FakeBigQuery.jobs.clear()
    engine = _cloud_engine(fake_bigquery, guard=10**9)
    with pytest.raises(CostGuardExceeded) as info:
        engine.execute("SELECT * FROM huge")
    assert info.value.estimated_bytes == 5 * 10**12
    assert info.value.code == "cost_guard"
    assert _FakeBigQuery.jobs == {}  # only the dry run reached the service


def test_cloud_write_is_refused_after_the_dry_run(fake_bigquery: str) -> None:
    _FakeBigQuery.estimate, _FakeBigQuery.statement_type = 10, "DELETE"
    _FakeBigQuery.jobs.clear()
    with pytest.raises(QueryRefused, match="DELETE"):
        _cloud_engine(fake_bigquery, guard=10**9).execute("DELETE FROM t WHERE true")
    assert _FakeBigQuery.jobs == {}


def test_an_interrupted_emulation_build_leaves_no_file_and_the_next_build_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `data emulate` skips databases whose file exists: a half-built file must never be there
    import querybench.engines.spider2_metadata_load as load

    meta = write_metadata(tmp_path / "meta")
    out = tmp_path / "shop.duckdb"
    real_create = load._create_table

    def interrupted(*args: Any, **kwargs: Any) -> int:
        real_create(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(load, "_create_table", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build_emulation(meta, out, "bigquery")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["meta"]

    (tmp_path / "shop.duckdb.part").write_bytes(b"a build killed with SIGKILL left this")
    monkeypatch.setattr(load, "_create_table", real_create)
    report = build_emulation(meta, out, "bigquery")
    assert (report.tables, report.rows) == (4, 5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["meta", "shop.duckdb"]
    with connect(f"bigquery+local://{out}") as engine:
        assert engine.execute("SELECT 1").rows == [(1,)]
