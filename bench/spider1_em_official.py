"""Run the official Spider 1.0 exact match on (gold, prediction, db_id) pairs, one JSON per pair.

Run by `bench.bench_em` under a Python that has nltk (and nltk's punkt data), with the official
test-suite-sql-eval checkout on `sys.path`; nothing here re-implements it: each pair goes through
the official `get_sql`, `eval_hardness`, `rebuild_sql_val`, `rebuild_sql_col` and
`Evaluator.eval_exact_match`, in the order the official `evaluate` calls them.

    OFFICIAL_PY bench/spider1_em_official.py CHECKOUT DB_DIR TABLES_JSON < pairs.jsonl
"""

from __future__ import annotations

import json
import os
import sys
import time


def main() -> None:
    checkout, db_dir, tables = sys.argv[1:4]
    sys.path.insert(0, checkout)
    import evaluation as ev  # the official module
    from process_sql import Schema, get_schema, get_sql

    kmaps = ev.build_foreign_key_map_from_json(tables)
    schemas: dict[str, object] = {}
    empty = json.dumps(
        {
            "except": None,
            "from": {"conds": [], "table_units": []},
            "groupBy": [],
            "having": [],
            "intersect": None,
            "limit": None,
            "orderBy": [],
            "select": [False, []],
            "union": None,
            "where": [],
        }
    )
    started = time.perf_counter()
    for line in sys.stdin:
        pair = json.loads(line)
        db = pair["db_id"]
        if db not in schemas:
            schemas[db] = Schema(get_schema(os.path.join(db_dir, db, db + ".sqlite")))
        schema = schemas[db]
        out: dict[str, object] = {"id": pair["id"]}
        try:
            g_sql = get_sql(schema, pair["gold"])
        except Exception as exc:  # the official script would stop here
            out["gold_error"] = repr(exc)
            print(json.dumps(out))
            continue
        out["gold_sql"] = json.loads(json.dumps(g_sql))
        out["hardness"] = ev.Evaluator().eval_hardness(g_sql)
        p_str = pair["pred"].replace("value", "1")
        try:
            p_sql = get_sql(schema, p_str)
            out["pred_sql"] = json.loads(json.dumps(p_sql))
        except Exception as exc:
            out["pred_error"] = repr(exc)
            p_sql = json.loads(empty)
        evaluator = ev.Evaluator()
        g_valid = ev.build_valid_col_units(g_sql["from"]["table_units"], schema)
        g_sql = ev.rebuild_sql_col(g_valid, ev.rebuild_sql_val(g_sql), kmaps[db])
        p_valid = ev.build_valid_col_units(p_sql["from"]["table_units"], schema)
        p_sql = ev.rebuild_sql_col(p_valid, ev.rebuild_sql_val(p_sql), kmaps[db])
        try:
            out["em"] = int(evaluator.eval_exact_match(p_sql, g_sql))
            out["partial"] = {
                k: [v["acc"], v["rec"], v["f1"], v["label_total"], v["pred_total"]]
                for k, v in evaluator.partial_scores.items()
            }
        except Exception as exc:  # e.g. sorting two FROM subqueries: the official run stops
            out["em_error"] = repr(exc)
        print(json.dumps(out))
    print(json.dumps({"seconds": time.perf_counter() - started}))


if __name__ == "__main__":
    main()
