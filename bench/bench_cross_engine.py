"""Cross-engine agreement: Spider 1.0 dev gold SQL, written for SQLite, run on other engines.

The path a user takes with `querybench db load URL --from DB.sqlite` and then `querybench db
query URL --dialect sqlite`, through the same functions: for each of the 19 dev databases in
../shared/data/spider1 the SQLite file is loaded into each engine with its names as they are
(`engines.load`), the loaded tables are read back once (`transpile.engine_schema`), and every
gold query is translated with them (`transpile(..., schema=...)`: names resolved against the
catalogue, SQLite's text/number comparisons written out as casts) and run. Rows are compared
with SQLite's under the Spider 1.0 execution match, twice per engine: on the drivers' raw values,
and on the values `db query` prints (`affinity.storage_value`: Decimal -> int or float, bool ->
int, dates -> ISO text). The server databases it creates (qb_bench_*) are dropped after each run.

    .venv/bin/python bench/bench_cross_engine.py [--engines duckdb,postgres,mysql,chdb]
        [--limit N] [--out bench/cross_engine_results.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from querybench.data.roots import data_root
from querybench.engines import connect
from querybench.engines.affinity import storage_value
from querybench.engines.load import load
from querybench.engines.sqlite import SQLiteEngine
from querybench.engines.transpile import engine_schema, transpile
from querybench.errors import EngineError
from querybench.evaluation.spider1.evaluate import spider1_result_match

TARGETS = {
    "duckdb": "duckdb:///{tmp}/{db}.duckdb",
    "postgres": "postgresql://postgres@127.0.0.1:5432/qb_bench_{db}",
    "mysql": "mysql://root@127.0.0.1:3306/qb_bench_{db}",
    "chdb": "chdb:///{tmp}/chdb_{db}",
}


def classify(gold: list[tuple[Any, ...]], rows: list[tuple[Any, ...]], order: bool) -> str:
    if len(gold) != len(rows) or (gold and len(gold[0]) != len(rows[0])):
        return "different shape"
    if order and spider1_result_match(gold, rows, False):
        return "same rows, different order"
    return "different values"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--engines", default="duckdb,postgres,mysql,chdb")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--out", type=Path, default=Path("bench/cross_engine_results.json"))
    args = parser.parse_args()
    root = data_root() / "spider1"
    entries = json.loads((root / "dev_subset_available_dbs.json").read_text())[: args.limit]
    by_db: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for i, entry in enumerate(entries):
        by_db[entry["db_id"]].append((i, entry["query"]))
    gold: dict[int, list[tuple[Any, ...]]] = {}
    for db, queries in by_db.items():
        with SQLiteEngine(root / db / f"{db}.sqlite") as sqlite:
            for i, sql in queries:
                gold[i] = sqlite.execute(sql, timeout=args.timeout).rows
    report: dict[str, Any] = {"queries": len(entries), "engines": {}}
    tmp = Path(tempfile.mkdtemp(prefix="qb-cross-"))
    try:
        for name in args.engines.split(","):
            report["engines"][name] = run_engine(name, by_db, gold, root, tmp, args.timeout)
            summary = {k: v for k, v in report["engines"][name].items() if k != "mismatches"}
            print(name, json.dumps(summary))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    args.out.write_text(json.dumps(report, indent=1, default=str) + "\n")


def drop_database(name: str, db: str) -> None:
    """Drop the server database a run created (the local files go with the temporary folder)."""
    if name == "postgres":
        import psycopg

        with psycopg.connect("host=127.0.0.1 user=postgres dbname=postgres", autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "qb_bench_{db}" WITH (FORCE)'.encode())
    elif name == "mysql":
        import pymysql

        with pymysql.connect(host="127.0.0.1", user="root") as c, c.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS `qb_bench_{db}`")


def run_engine(
    name: str,
    by_db: dict[str, list[tuple[int, str]]],
    gold: dict[int, list[tuple[Any, ...]]],
    root: Path,
    tmp: Path,
    timeout: float,
) -> dict[str, Any]:
    raw_ok = norm_ok = 0
    classes: Counter[str] = Counter()
    mismatches: list[dict[str, Any]] = []
    start = time.monotonic()
    for db, queries in by_db.items():
        target = TARGETS[name].format(tmp=tmp, db=db.lower())
        load(target, root / db / f"{db}.sqlite", replace=True)
        engine = connect(target)
        schema = engine_schema(engine)
        try:
            for i, sql in queries:
                order = "order by" in sql.lower()
                try:
                    translated = transpile(sql, "sqlite", engine.dialect, schema=schema)
                    rows = engine.execute(translated, timeout=timeout).rows
                except EngineError as exc:
                    label = f"error: {type(exc).__name__}"
                    classes[label] += 1
                    mismatches.append({"i": i, "db": db, "sql": sql, "class": label,
                                       "detail": str(exc)[:300]})  # fmt: skip
                    continue
                if spider1_result_match(gold[i], rows, order):
                    raw_ok += 1
                normalised = [tuple(storage_value(v) for v in row) for row in rows]
                if spider1_result_match(gold[i], normalised, order):
                    norm_ok += 1
                    continue
                label = classify(gold[i], normalised, order)
                classes[label] += 1
                mismatches.append({"i": i, "db": db, "sql": sql, "class": label,
                                   "translated": translated, "gold": gold[i][:3],
                                   "got": normalised[:3]})  # fmt: skip
        finally:
            engine.close()
            drop_database(name, db.lower())
    total = sum(len(q) for q in by_db.values())
    return {
        "total": total,
        "raw_match": raw_ok,
        "raw_share": round(raw_ok / total, 4),
        "match": norm_ok,
        "share": round(norm_ok / total, 4),
        "classes": dict(classes),
        "seconds": round(time.monotonic() - start, 1),
        "mismatches": mismatches,
    }


if __name__ == "__main__":
    main()
