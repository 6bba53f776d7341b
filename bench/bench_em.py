"""Spider 1.0 exact match: querybench against the official `evaluation.py`, instance by instance,
and the time each takes.

    python -m bench.bench_em --official-test-suite TEST_SUITE --official-python OFFICIAL_PY \\
        [--per-query 6] [--seed 0] [--predictions FILE ...]

TEST_SUITE is a checkout of taoyds/test-suite-sql-eval (never vendored), OFFICIAL_PY a Python
with nltk and nltk's punkt data (`$NLTK_DATA/tokenizers/punkt_tab/english/`). The pairs are the
Spider 1.0 dev questions whose database is present: each gold query as its own prediction, the
near misses of `bench.spider1_em_mutations` (`--per-query` edits per gold, seeded), and each
`--predictions` file (one SQL per line, aligned with dev_gold.sql, as the official script reads
it). For each pair both sides give the parse of the gold and of the prediction, the hardness,
EM and the ten partial scores (acc, rec, F1, both totals); every difference is printed.

Timing: the official side is its per-pair loop (`get_sql` twice, the rebuilds and
`eval_exact_match`, measured inside its process, schemas read once per database as querybench
reads them); querybench's is `score_exact` on the same pairs, in this process.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.spider1_em_mutations import near_misses
from querybench.errors import SqlParseError
from querybench.evaluation.spider1.exact import foreign_key_map, score_exact
from querybench.tasks.spider1_sql import SpiderSchema, parse_spider_sql


def _data() -> Path:
    root = Path(os.environ.get("QUERYBENCH_DATA", Path(__file__).parents[1] / ".." / "shared/data"))
    return root / "spider1"


def build_pairs(per_query: int, seed: int, predictions: list[Path]) -> list[dict[str, str]]:
    data = _data()
    tables = {e["db_id"]: e for e in json.loads((data / "tables.json").read_text())}
    gold = [line.rstrip("\n").split("\t") for line in (data / "dev_gold.sql").open()]
    rng = random.Random(seed)
    pairs: list[dict[str, str]] = []
    preds = [[line.strip().split("\t")[0] for line in p.open()] for p in predictions]
    for i, (sql, db) in enumerate(gold):
        if not (data / db / f"{db}.sqlite").is_file():
            continue
        columns = [c.lower() for _, c in tables[db]["column_names_original"][1:]]
        pairs.append({"id": f"{i}:gold", "gold": sql, "pred": sql, "db_id": db})
        for name, text in near_misses(sql, columns, rng, per_query):
            pairs.append({"id": f"{i}:{name}", "gold": sql, "pred": text, "db_id": db})
        for k, lines in enumerate(preds):
            if i < len(lines) and lines[i]:
                pairs.append({"id": f"{i}:pred{k}", "gold": sql, "pred": lines[i], "db_id": db})
    return pairs


def run_official(
    pairs: list[dict[str, str]], checkout: Path, python: str
) -> tuple[list[dict[str, Any]], float]:
    data = _data()
    driver = Path(__file__).with_name("spider1_em_official.py")
    stdin = "".join(json.dumps(p) + "\n" for p in pairs)
    done = subprocess.run(
        [python, str(driver), str(checkout), str(data), str(data / "tables.json")],
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    return lines[:-1], float(lines[-1]["seconds"])


def run_querybench(pairs: list[dict[str, str]]) -> tuple[list[dict[str, Any]], float]:
    data = _data()
    tables = {e["db_id"]: e for e in json.loads((data / "tables.json").read_text())}
    schemas: dict[str, SpiderSchema] = {}
    out = []
    started = time.perf_counter()
    for pair in pairs:
        db = pair["db_id"]
        if db not in schemas:
            schemas[db] = SpiderSchema.from_sqlite(data / db / f"{db}.sqlite")
        row: dict[str, Any] = {"id": pair["id"]}
        try:
            result = score_exact(
                schemas[db], foreign_key_map(tables[db]), pair["gold"], pair["pred"]
            )
        except SqlParseError as exc:
            row["gold_error"] = str(exc)
        else:
            row |= {"em": result.score, "hardness": result.hardness, "pred_error": result.reason}
            row["partial"] = {
                k: [p.acc, p.rec, p.f1, p.label_total, p.pred_total]
                for k, p in result.partial.items()
            }
        out.append(row)
    seconds = time.perf_counter() - started
    for pair, row in zip(pairs, out, strict=True):  # the parses, untimed, for the comparison
        schema = schemas[pair["db_id"]]
        for side in ("gold", "pred"):
            try:
                text = pair[side] if side == "gold" else pair[side].replace("value", "1")
                row[f"{side}_sql"] = json.loads(
                    json.dumps(parse_spider_sql(schema, text).to_json())
                )
            except SqlParseError:
                row[f"{side}_sql"] = None
    return out, seconds


def compare(
    pairs: list[dict[str, str]], official: list[dict[str, Any]], ours: list[dict[str, Any]]
) -> int:
    differences = 0
    for pair, o, q in zip(pairs, official, ours, strict=True):
        problems = []
        if ("gold_error" in o) != ("gold_error" in q):
            problems.append(
                f"gold parse: official {o.get('gold_error')}, ours {q.get('gold_error')}"
            )
        elif "gold_error" not in o:
            if o["gold_sql"] != q["gold_sql"]:
                problems.append("gold parse differs")
            if o.get("pred_sql") != q["pred_sql"]:
                problems.append(f"prediction parse differs ({o.get('pred_error')!s:.80})")
            if ("pred_error" in o) != (q["pred_error"] is not None):
                problems.append("prediction parse success differs")
            for key in ("em", "hardness", "partial"):
                if o.get(key) != q.get(key):
                    problems.append(f"{key}: official {o.get(key)}, ours {q.get(key)}")
        if problems:
            differences += 1
            print(f"{pair['id']} ({pair['db_id']}): {pair['pred']}")
            for p in problems:
                print(f"    {p}")
    return differences


def _table_text(output: str) -> str:
    """The official tables: from the level header line to the end."""
    lines = output.splitlines()
    start = next(
        i
        for i, line in enumerate(lines)
        if line.split() == ["easy", "medium", "hard", "extra", "all"]
    )
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("(")), len(lines))
    return "\n".join(line.rstrip() for line in lines[start:end])


def whole_files(
    name: str, preds: list[str], checkout: Path, python: str, rounds: int
) -> tuple[bool, str, float, float]:
    """The official `evaluation.py --etype all` and `querybench eval spider1 --metrics ex,em` on
    one predictions file (the gold lines whose database is present): (same tables, the official
    EM and EX over all, official median seconds, querybench median seconds). querybench's
    result cache is warm after its first round, as a re-score is; the official script keeps
    nothing between runs."""
    data = _data()
    work = Path(tempfile.mkdtemp(prefix="bench-em-"))
    gold_lines = [line for line in (data / "dev_gold.sql").read_text().splitlines()]
    kept = [
        i
        for i, line in enumerate(gold_lines)
        if (data / line.split("\t")[1] / (line.split("\t")[1] + ".sqlite")).is_file()
    ]
    (work / "gold.sql").write_text("".join(gold_lines[i] + "\n" for i in kept))
    (work / "pred.sql").write_text(
        "".join(
            (preds[i] if i < len(preds) and preds[i].strip() else "SELECT") + "\n" for i in kept
        )
    )
    official_cmd = [
        python,
        "evaluation.py",
        "--gold",
        str(work / "gold.sql"),
        "--pred",
        str(work / "pred.sql"),
        "--db",
        str(data),
        "--table",
        str(data / "tables.json"),
        "--etype",
        "all",
    ]
    ours_cmd = [
        str(Path(sys.executable).with_name("querybench")),
        "eval",
        "spider1",
        "--gold",
        str(work / "gold.sql"),
        "--predictions",
        str(work / "pred.sql"),
        "--db-dir",
        str(data),
        "--tables",
        str(data / "tables.json"),
        "--metrics",
        "ex,em",
    ]
    env = {**os.environ, "QUERYBENCH_CACHE": str(work / "cache"), "COLUMNS": "200"}
    times: dict[str, list[float]] = {"official": [], "ours": []}
    outputs: dict[str, str] = {}
    for _ in range(rounds):
        for side, cmd, cwd in (("official", official_cmd, checkout), ("ours", ours_cmd, None)):
            started = time.perf_counter()
            done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=True)
            times[side].append(time.perf_counter() - started)
            outputs[side] = done.stdout
    same = _table_text(outputs["official"]) == _table_text(outputs["ours"])
    if not same:
        print(
            f"{name}: the tables differ\n--- official\n{_table_text(outputs['official'])}\n"
            f"--- querybench\n{_table_text(outputs['ours'])}"
        )
    shutil.rmtree(work, ignore_errors=True)
    table = _table_text(outputs["official"]).splitlines()
    rows = {line[:20].strip(): line.split()[-1] for line in table if line.strip()}
    figures = f"EM {rows.get('exact match')}, EX {rows.get('execution')}"
    return same, figures, statistics.median(times["official"]), statistics.median(times["ours"])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--official-test-suite", type=Path, required=True)
    parser.add_argument("--official-python", default=sys.executable)
    parser.add_argument("--per-query", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--predictions", type=Path, nargs="*", default=[])
    args = parser.parse_args()
    pairs = build_pairs(args.per_query, args.seed, args.predictions)
    official_times, our_times = [], []
    for _ in range(args.rounds):
        official, seconds = run_official(pairs, args.official_test_suite, args.official_python)
        official_times.append(seconds)
        ours, seconds = run_querybench(pairs)
        our_times.append(seconds)
    differences = compare(pairs, official, ours)
    kinds: dict[str, int] = {}
    for pair in pairs:
        kind = pair["id"].split(":", 1)[1]
        kind = "stacked" if "+" in kind else kind
        kinds[kind] = kinds.get(kind, 0) + 1
    unparsable = sum("pred_error" in o for o in official)
    em = sum(o.get("em", 0) for o in official)
    print(f"pairs: {len(pairs)} ({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))})")
    print(f"official: EM 1 on {em}, prediction unparsable on {unparsable}")
    print(f"instances that differ: {differences}")
    off, our = statistics.median(official_times), statistics.median(our_times)
    print(
        f"per-pair loop, median of {args.rounds}: official {off:.2f} s, "
        f"querybench {our:.2f} s ({off / our:.1f}x)"
    )
    rng = random.Random(args.seed)
    files: list[tuple[str, list[str]]] = [
        (str(p), [line.strip().split("\t")[0] for line in p.open()]) for p in args.predictions
    ]
    by_line: dict[int, list[str]] = {}
    for pair in pairs:
        by_line.setdefault(int(pair["id"].split(":")[0]), []).append(pair["pred"])
    size = max(by_line) + 1
    files.append(
        (
            "near misses (one drawn per gold)",
            [rng.choice(by_line[i]) if i in by_line else "" for i in range(size)],
        )
    )
    for name, preds in files:
        same, figures, off, our = whole_files(
            name, preds, args.official_test_suite, args.official_python, args.rounds
        )
        print(
            f"{name} ({figures}): tables {'identical' if same else 'DIFFER'}; whole run, median of "
            f"{args.rounds}: official --etype all {off:.2f} s, querybench --metrics ex,em "
            f"{our:.2f} s ({off / our:.1f}x)"
        )


if __name__ == "__main__":
    main()
