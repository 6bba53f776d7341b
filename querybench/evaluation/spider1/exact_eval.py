"""Spider 1.0 exact match over a gold file's instances (`eval spider1 --metrics ex,em`).

Each database's schema is read as the official script reads it, from `<db_dir>/<db_id>/<db_id>
.sqlite` (every table, lower-cased); a database that is not there is read from its tables.json
entry instead (the official script cannot score it at all). Foreign keys come from tables.json.
A missing prediction is scored as the official script scores an unparsable one, against the
empty query; a gold the parser cannot read (the official script stops there) has no EM, and
says why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from querybench import json_input
from querybench.errors import DataError, SqlParseError
from querybench.evaluation.spider1.exact import (
    ExactMatch,
    ExactMatchFailure,
    foreign_key_map,
    score_exact,
)
from querybench.tasks.input_files import read_text
from querybench.tasks.spider1_sql import SpiderSchema


@dataclass(frozen=True)
class ExactMatchInput:
    instance_id: str
    gold_sql: str
    db_id: str
    pred_sql: str | None  # None: no prediction line


def default_tables_json(gold: Path, db_dir: Path) -> Path | None:
    """tables.json beside the gold file, in the database folder or beside it (Spider's layout)."""
    for candidate in (gold.parent, db_dir, db_dir.parent):
        if (candidate / "tables.json").is_file():
            return candidate / "tables.json"
    return None


def read_tables_json(path: Path) -> dict[str, Mapping[str, Any]]:
    try:
        entries = json_input.loads(read_text(path, "tables.json"))
        return {str(e["db_id"]): e for e in entries}
    except DataError:
        raise
    except (ValueError, TypeError, KeyError) as exc:
        raise DataError(f"cannot read tables.json {path}: {exc!r}") from exc


def exact_matches(
    instances: Iterable[ExactMatchInput], *, db_dir: Path, tables_json: Path
) -> dict[str, ExactMatch | ExactMatchFailure]:
    """EM of each instance, by instance id."""
    tables = read_tables_json(tables_json)
    schemas: dict[str, SpiderSchema | str] = {}
    foreign_keys: dict[str, dict[str, str]] = {}
    out: dict[str, ExactMatch | ExactMatchFailure] = {}
    for inst in instances:
        db = inst.db_id
        if db not in schemas:
            schemas[db] = _schema(db, db_dir, tables)
            foreign_keys[db] = foreign_key_map(tables[db]) if db in tables else {}
        schema = schemas[db]
        if isinstance(schema, str):
            out[inst.instance_id] = ExactMatchFailure(schema)
            continue
        try:
            result = score_exact(schema, foreign_keys[db], inst.gold_sql, inst.pred_sql or "")
        except SqlParseError as exc:
            out[inst.instance_id] = ExactMatchFailure(f"the gold does not parse: {exc}")
            continue
        if inst.pred_sql is None:
            result = replace(result, reason="no prediction: scored as the empty query")
        out[inst.instance_id] = result
    return out


def _schema(db: str, db_dir: Path, tables: Mapping[str, Mapping[str, Any]]) -> SpiderSchema | str:
    path = db_dir / db / f"{db}.sqlite"
    if path.is_file():
        try:
            return SpiderSchema.from_sqlite(path)
        except DataError as exc:
            return str(exc)
    if db in tables:
        try:
            return SpiderSchema.from_tables_json(tables[db])
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            return f"malformed tables.json entry for {db}: {exc!r}"
    return f"no schema for {db}: neither {path} nor a tables.json entry"
