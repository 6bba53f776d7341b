"""How much Spider 2.0 gold SQL runs on the offline BigQuery and Snowflake emulations.

For every Spider 2.0-lite `bq*`/`ga*` gold SQL whose database metadata is present, the database
is built from its metadata (types, nested fields, sample rows) with `build_emulation`, and the
gold SQL is transpiled by sqlglot (BigQuery to DuckDB) and executed on `BigQueryLocalEngine`.
The same for the Spider 2.0-snow gold SQL on `SnowflakeLocalEngine` (fakesnow). A query
"executes" when it returns without error (results on five sample rows are not compared).

    python -m bench.bench_emulation [--work-dir DIR] [--out results.jsonl] [--timeout 30]
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import sqlglot

from querybench.data.roots import data_root
from querybench.engines.bigquery import BigQueryLocalEngine
from querybench.engines.snowflake import SnowflakeLocalEngine
from querybench.engines.spider2_metadata_load import Dialect, build_emulation
from querybench.errors import EngineError

# Failure classes, first match wins: (class, pattern on the error message).
FAILURE_CLASSES = [
    (
        "missing table (not in the metadata)",
        r"Table with name .* does not exist|Catalog Error: Table",
    ),
    (
        "missing column / field",
        r"Referenced column|does not have a column|not found in FROM|"
        r"Could not find key|STRUCT .* does not contain|column .* not found|Cannot extract field",
    ),
    (
        "unsupported function",
        r"Function with name .* does not exist|No function matches|"
        r"Macro Function|not implemented",
    ),
    (
        "type mismatch",
        r"Conversion Error|Could not convert|cannot be cast|Cannot compare|"
        r"Cannot mix|No function matches the given name and argument types",
    ),
    ("syntax after transpilation", r"Parser Error|syntax error"),
    ("binder (other)", r"Binder Error"),
    ("timeout", r"timeout"),
]


@dataclass(frozen=True)
class Outcome:
    benchmark: str
    instance_id: str
    database: str
    transpiles: bool
    executes: bool
    failure: str | None
    message: str | None


def classify(message: str) -> str:
    for name, pattern in FAILURE_CLASSES:
        if re.search(pattern, message, re.IGNORECASE):
            return name
    return "other"


def transpiles(sql: str, dialect: str) -> bool:
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
        return len(statements) == 1 and bool(statements[0].sql("duckdb"))
    except sqlglot.errors.SqlglotError:
        return False


def tasks(jsonl: Path, key: str) -> dict[str, str]:
    return {
        item["instance_id"]: item[key]
        for item in map(json.loads, jsonl.read_text(encoding="utf-8").splitlines())
    }


def run(
    benchmark: str,
    dialect: Dialect,
    gold_sql: list[Path],
    db_of: dict[str, str],
    metadata: Path,
    work: Path,
    timeout: float,
) -> list[Outcome]:
    outcomes: list[Outcome] = []
    engines: dict[str, BigQueryLocalEngine | SnowflakeLocalEngine] = {}
    for path in gold_sql:
        iid = path.stem
        database = db_of[iid]
        if database not in engines:
            target = work / dialect / f"{database}.duckdb"
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    build_emulation(metadata / database, target, dialect)
                except Exception as exc:
                    target.unlink(missing_ok=True)
                    raise SystemExit(f"cannot build {database}: {exc}") from exc
            engines[database] = (
                BigQueryLocalEngine(target)
                if dialect == "bigquery"
                else SnowflakeLocalEngine(target)
            )
        sql = path.read_text(encoding="utf-8")
        ok_transpile = transpiles(sql, dialect)
        try:
            engines[database].execute(sql, timeout=timeout, max_rows=1_000_000)
            outcomes.append(Outcome(benchmark, iid, database, ok_transpile, True, None, None))
        except EngineError as exc:
            message = str(exc).splitlines()[0][:300]
            outcomes.append(
                Outcome(benchmark, iid, database, ok_transpile, False, classify(str(exc)), message)
            )
    for engine in engines.values():
        engine.close()
    return outcomes


def report(name: str, outcomes: list[Outcome]) -> None:
    n = len(outcomes)
    t = sum(o.transpiles for o in outcomes)
    e = sum(o.executes for o in outcomes)
    print(
        f"{name}: {n} gold SQL; transpiles {t}/{n} ({100 * t / max(n, 1):.1f} %), "
        f"executes {e}/{n} ({100 * e / max(n, 1):.1f} %)"
    )
    for failure, count in Counter(o.failure for o in outcomes if o.failure).most_common():
        print(f"    {count:4d}  {failure}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--work-dir", type=Path, default=None, help="keep the built databases")
    parser.add_argument("--out", type=Path, default=None, help="one JSON line per gold SQL")
    parser.add_argument("--timeout", type=float, default=30.0)
    args = parser.parse_args()
    root = data_root() / "spider2"
    lite = root / "spider2-lite"
    metadata = lite / "resource" / "databases"
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="querybench-emulation-"))

    lite_db = tasks(lite / "spider2-lite.jsonl", "db")
    lite_sql = sorted(
        p
        for p in (lite / "evaluation_suite" / "gold" / "sql").glob("*.sql")
        if p.stem.startswith(("bq", "ga"))
        and p.stem in lite_db
        and (metadata / "bigquery" / lite_db[p.stem]).is_dir()
    )
    snow = root / "spider2-snow"
    snow_db = tasks(snow / "spider2-snow.jsonl", "db_id")
    snow_sql = sorted(
        p
        for p in (snow / "evaluation_suite" / "gold" / "sql").glob("*.sql")
        if p.stem in snow_db and (metadata / "snowflake" / snow_db[p.stem]).is_dir()
    )
    bq = run(
        "spider2-lite", "bigquery", lite_sql, lite_db, metadata / "bigquery", work, args.timeout
    )
    sf = run(
        "spider2-snow", "snowflake", snow_sql, snow_db, metadata / "snowflake", work, args.timeout
    )
    report("BigQuery emulation (spider2-lite bq*/ga*)", bq)
    report("Snowflake on fakesnow (spider2-snow)", sf)
    if args.out:
        args.out.write_text("".join(json.dumps(asdict(o)) + "\n" for o in [*bq, *sf]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
