"""BIRD mini-dev's official MySQL / PostgreSQL gold against its SQLite gold, on stand-in data.

The BIRD dev databases are not in ../shared/data (see its bird/MANIFEST.json), so this builds
stand-in SQLite databases from `dev_tables.json` (the real tables, columns and declared types;
keys 1..N so joins meet; text cells drawn from the string literals of that database's mini-dev
questions, dates from the years they name, about one NULL in ten), loads them into MariaDB
(one database for every db_id, as the official dump) and PostgreSQL (`postgres_names`) with
`engines.load`, and then:

* scores each dialect's gold as its own predictions (the oracle), with `evaluate_bird` and
  `--metrics ex,soft_f1`: 100 wherever the gold runs on the loaded database;
* runs the three golds of every question id present in all three files and compares the rows
  under BIRD's set rule (what EX would say of a MySQL/PostgreSQL answer scored against SQLite's),
  counting where they agree and sorting the rest by cause.

Stand-in data decides only which queries *run* and which results agree on *some* data; it says
nothing of the real answers. The questions files for MySQL/PostgreSQL are the official ones
(bird-bench/mini_dev, `bird_evaluation/data/` at commit a7efe5a), passed as paths.

    .venv/bin/python -m bench.bird_mini_dev_dialects --mysql-questions mini_dev_mysql.json \
        --postgresql-questions mini_dev_postgresql.json [--rows 40] [--out DIR] [--keep]

The server databases (birdmetrics_minidev) are dropped at the end unless --keep.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import re
import sqlite3
import tempfile
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

from querybench.data.roots import data_root
from querybench.engines.base import Result
from querybench.engines.load import load
from querybench.engines.pool import QueryJob, QueryPool
from querybench.errors import EngineError
from querybench.evaluation.bird.evaluate import BIRD_SEPARATOR, bird_database, evaluate_bird
from querybench.evaluation.bird.metrics import BirdMetric

URLS = {
    "mysql": "mysql://root@127.0.0.1:3306/birdmetrics_minidev",
    "postgresql": "postgresql://postgres@127.0.0.1:5432/birdmetrics_minidev",
}
_LITERAL = re.compile(r"'((?:[^']|'')*)'")
_YEAR = re.compile(r"\b(19[5-9]\d|20[0-2]\d)\b")


def _is_key(name: str, index: int, keys: set[int]) -> bool:
    return index in keys or name.lower() == "id" or name.lower().endswith("id")


def stand_in_databases(bird_dir: Path, out: Path, rows: int, seed: int) -> list[str]:
    """One SQLite file per db_id of dev_tables.json, filled as the module docstring says."""
    tables = json.loads((bird_dir / "dev_tables.json").read_text(encoding="utf-8"))
    questions = json.loads((bird_dir / "mini_dev_sqlite.json").read_text(encoding="utf-8"))
    rng = random.Random(seed)
    built = []
    for schema in tables:
        db_id = schema["db_id"]
        sqls = [q["SQL"] for q in questions if q["db_id"] == db_id]
        literals = sorted(
            {m.replace("''", "'").strip("%") for s in sqls for m in _LITERAL.findall(s)}
        )
        years = sorted({int(y) for s in sqls for y in _YEAR.findall(s)}) or [2010]
        keys = {c for k in schema["primary_keys"] for c in (k if isinstance(k, list) else [k])}
        keys |= {c for pair in schema["foreign_keys"] for c in pair}
        path = out / db_id / f"{db_id}.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        conn = sqlite3.connect(path)
        for t, table in enumerate(schema["table_names_original"]):
            cols = [
                (i, name, schema["column_types"][i])
                for i, (ti, name) in enumerate(schema["column_names_original"])
                if ti == t
            ]
            decl = ", ".join(f'"{name}" {kind.upper()}' for _, name, kind in cols)
            conn.execute(f'CREATE TABLE "{table}" ({decl})')
            data = [
                tuple(
                    _value(rng, r, name, i, kind, keys, literals, years) for i, name, kind in cols
                )
                for r in range(1, rows + 1)
            ]
            marks = ", ".join("?" for _ in cols)
            conn.executemany(f'INSERT INTO "{table}" VALUES ({marks})', data)
        conn.commit()
        conn.close()
        built.append(db_id)
    return built


def _value(
    rng: random.Random,
    row: int,
    name: str,
    index: int,
    kind: str,
    keys: set[int],
    literals: list[str],
    years: list[int],
) -> Any:
    if _is_key(name, index, keys):
        return row if kind == "integer" else f"k{row}"
    if rng.random() < 0.1:
        return None
    if kind == "integer":
        return rng.randint(0, 10)
    if kind == "real":
        return round(rng.uniform(0, 100), 1)
    day = dt.date(rng.choice(years), rng.randint(1, 12), rng.randint(1, 28))
    if kind == "date":
        return day.isoformat()
    if kind == "datetime":
        return f"{day.isoformat()} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00"
    return rng.choice(literals) if literals and rng.random() < 0.7 else f"w{rng.randint(1, 9)}"


def load_servers(db_dir: Path, db_ids: list[str]) -> None:
    for db_id in db_ids:
        source = db_dir / db_id / f"{db_id}.sqlite"
        load(URLS["mysql"], source, replace=True)
        load(URLS["postgresql"], source, replace=True, postgres_names=True)


def oracle(questions: Path, db_dir: Path, dialect: str, tmp: Path) -> dict[str, Any]:
    entries = json.loads(questions.read_text(encoding="utf-8"))
    predictions = {
        str(q["question_id"]): f"{q['SQL']}{BIRD_SEPARATOR}{q['db_id']}" for q in entries
    }
    pred = tmp / f"oracle_{dialect}.json"
    pred.write_text(json.dumps(predictions), encoding="utf-8")
    results = evaluate_bird(
        pred,
        questions=questions,
        db_dir=db_dir,
        db_url=None if dialect == "sqlite" else URLS[dialect],
        workers=2,
        metrics=(BirdMetric.EX, BirdMetric.SOFT_F1),
        cache_dir=tmp / "cache",
    )
    gold_errors = [r for r in results if r.metrics["gold_error"]]
    return {
        "questions": len(results),
        "ex": round(100 * sum(r.score for r in results) / len(results), 2),
        "soft_f1": round(100 * sum(r.metrics["soft_f1"] for r in results) / len(results), 2),
        "gold_errors": len(gold_errors),
        "gold_error_samples": sorted({(r.message or "")[:140] for r in gold_errors})[:12],
    }


def _plain(value: Any) -> Any:
    """SQLite's storage class of a driver value, to tell value-type from real differences."""
    if isinstance(value, Decimal):
        exponent = value.as_tuple().exponent
        return int(value) if isinstance(exponent, int) and exponent >= 0 else float(value)
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value.isoformat()
    if isinstance(value, float):
        return round(value, 6)
    return value


def compare(questions: dict[str, Path], db_dir: Path) -> dict[str, Any]:
    files = {d: json.loads(p.read_text(encoding="utf-8")) for d, p in questions.items()}
    by_id = {d: {str(q["question_id"]): q for q in entries} for d, entries in files.items()}
    common = [qid for qid in by_id["sqlite"] if all(qid in by_id[d] for d in by_id)]
    jobs = []
    for dialect in by_id:
        for qid in common:
            q = by_id[dialect][qid]
            url = None if dialect == "sqlite" else URLS[dialect]
            jobs.append(
                QueryJob(f"{dialect}:{qid}", bird_database(q["db_id"], db_dir, url), q["SQL"])
            )
    outcome: dict[str, Result | EngineError] = {}
    with QueryPool(workers=2, timeout=60) as pool:
        for done in pool.run(jobs):
            outcome[done.key] = done.result or done.error or EngineError("no outcome")
    report: dict[str, Any] = {"common_ids": len(common)}
    for dialect in ("mysql", "postgresql"):
        causes: Counter[str] = Counter()
        samples: dict[str, list[str]] = {}
        for qid in common:
            base, other = outcome[f"sqlite:{qid}"], outcome[f"{dialect}:{qid}"]
            if isinstance(base, EngineError) or isinstance(other, EngineError):
                cause = (
                    "sqlite gold fails"
                    if isinstance(base, EngineError)
                    else f"{dialect} gold fails"
                )
            elif set(base.rows) == set(other.rows):
                cause = "same rows (EX 1)" if base.rows else "same rows, both empty (EX 1)"
            elif {tuple(map(_plain, r)) for r in base.rows} == {
                tuple(map(_plain, r)) for r in other.rows
            }:
                cause = "same values, other types or precision (EX 0)"
            else:
                cause = "different rows (EX 0)"
            causes[cause] += 1
            samples.setdefault(cause, []).append(qid)
        report[dialect] = {
            "causes": dict(causes.most_common()),
            "ids": {c: ids[:15] for c, ids in samples.items()},
        }
    return report


def first_of_each_id(source: Path, copy: Path) -> Path:
    """The questions file without later repeats of a question_id (the July 2024 official
    MySQL/PostgreSQL files hold ids 137 and 138 twice, the copies identical)."""
    seen: set[object] = set()
    kept = []
    for entry in json.loads(source.read_text(encoding="utf-8")):
        if entry["question_id"] not in seen:
            seen.add(entry["question_id"])
            kept.append(entry)
    copy.write_text(json.dumps(kept), encoding="utf-8")
    return copy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bird-dir", type=Path, default=data_root() / "bird")
    parser.add_argument("--mysql-questions", type=Path, required=True)
    parser.add_argument("--postgresql-questions", type=Path, required=True)
    parser.add_argument("--rows", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="keep the SQLite files here")
    parser.add_argument("--keep", action="store_true", help="keep the server databases")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="birdmetrics-") as tmp_name:
        tmp = Path(tmp_name)
        db_dir = args.out or tmp / "dev_databases"
        db_ids = stand_in_databases(args.bird_dir, db_dir, args.rows, args.seed)
        load_servers(db_dir, db_ids)
        questions = {
            "sqlite": args.bird_dir / "mini_dev_sqlite.json",
            "mysql": first_of_each_id(args.mysql_questions, tmp / "mini_dev_mysql.json"),
            "postgresql": first_of_each_id(
                args.postgresql_questions, tmp / "mini_dev_postgresql.json"
            ),
        }
        try:
            report = {
                "oracle": {d: oracle(p, db_dir, d, tmp) for d, p in questions.items()},
                "cross_dialect": compare(questions, db_dir),
            }
        finally:
            if not args.keep:
                drop_servers()
    print(json.dumps(report, indent=1))


def drop_servers() -> None:
    import psycopg
    import pymysql

    with pymysql.connect(host="127.0.0.1", user="root") as conn, conn.cursor() as cursor:
        cursor.execute("DROP DATABASE IF EXISTS birdmetrics_minidev")
    with psycopg.connect("host=127.0.0.1 user=postgres dbname=postgres", autocommit=True) as c:
        c.execute("DROP DATABASE IF EXISTS birdmetrics_minidev WITH (FORCE)")


if __name__ == "__main__":
    main()
