"""The user's cross-engine path: `db load` a Spider 1.0 SQLite file into another engine, then
`db query --dialect sqlite` its gold SQL there, and compare the rows with SQLite's.

Run through the real command line (typer's runner) into the real PostgreSQL, MariaDB, chdb and
DuckDB; the rows both sides print are compared under the Spider 1.0 execution match, as
`bench/bench_cross_engine.py` does for all 19 databases.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from querybench.cli import app
from querybench.evaluation.spider1.evaluate import spider1_result_match
from tests.conftest import require_data
from tests.server_databases import URLS, drop, require_server

runner = CliRunner()
DATABASES = ("concert_singer", "pets_1", "car_1")


def cli_rows(url: str, queries: Path) -> list[list[tuple[Any, ...]] | None]:
    """Each query's rows as `db query --file --dialect sqlite` prints them (None on an error)."""
    out = runner.invoke(app, ["db", "query", url, "--file", str(queries), "--dialect", "sqlite"])
    assert out.exit_code == 0, out.output
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    return [None if o["error"] else [tuple(r) for r in o["rows"]] for o in lines]


@pytest.mark.parametrize("kind", ["postgres", "mysql", "chdb", "duckdb"])
def test_load_then_query_agrees_with_sqlite(kind: str, tmp_path: Path) -> None:
    root = require_data("spider1")
    require_server(kind)
    entries = json.loads((root / "dev_subset_available_dbs.json").read_text())
    matched = total = 0
    for db in DATABASES:
        gold_sql = [e["query"] for e in entries if e["db_id"] == db]
        queries = tmp_path / f"{db}.sql"
        queries.write_text("\n".join(gold_sql) + "\n")
        source = root / db / f"{db}.sqlite"
        name = f"crossengine_{db}_{uuid.uuid4().hex[:8]}".lower()
        url = URLS[kind].format(name=name) if kind in URLS else f"{kind}://{tmp_path / name}"
        try:
            loaded = runner.invoke(app, ["db", "load", url, "--from", str(source)])
            assert loaded.exit_code == 0, loaded.output
            got = cli_rows(url, queries)
        finally:
            drop(kind, name)
        gold = cli_rows(f"sqlite://{source}", queries)
        assert len(got) == len(gold) == len(gold_sql)
        for sql, want, rows in zip(gold_sql, gold, got, strict=True):
            assert want is not None, sql
            total += 1
            matched += rows is not None and spider1_result_match(
                want, rows, "order by" in sql.lower()
            )
    assert total == 179
    assert matched / total >= 0.95, f"{kind}: {matched}/{total}"
