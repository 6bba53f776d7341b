"""Agreement of `eval spider2` (official scoring) with the official agentic `evaluate.py`, case by
case, on submissions generated from the real gold.

The official code is not part of querybench: put `evaluate.py` and `eval_utils.py` of
xlang-ai/Spider2 `spider2/evaluation_suite/` (commit db1d8e1b) in a folder of your own, e.g.

    C=db1d8e1b:spider2/evaluation_suite
    git -C SPIDER2_CLONE show $C/evaluate.py > /tmp/off/evaluate.py
    git -C SPIDER2_CLONE show $C/eval_utils.py > /tmp/off/eval_utils.py
    PYTHONPATH=. python bench/spider2_agentic_official.py --official-dir /tmp/off [--limit N]

Each case is one instance: a gold folder holding that task's gold entry and files, and a
submission folder with one line (a gold table, a perturbed one, a text answer derived from the
gold). The official `run_evaluation` runs on it in this process (its `pdb.set_trace` raises,
so a pdb stop is seen as one); querybench scores the same folders. A case agrees when both
give 1, both give 0, or the official stops (pdb / crash) where querybench gives `scorer_error`.

`--gold-dir-folder N` instead scores one whole folder (`eval spider2 --gold-dir`): a gold folder
whose eval config names N ids the built-in list lacks, answered in every way (a path through
`../shared_files/` from a task folder that exists or not among them), against one official run:
the instances the official scores and their verdicts must be querybench's.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import random
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from querybench.data.roots import data_root
from querybench.evaluation.spider2.agentic.evaluate import evaluate_spider2_agentic
from querybench.tasks import load_tasks
from querybench.tasks.model import Task
from querybench.tasks.spider2_agentic import gold_dir, with_eval_config


class PdbStop(Exception):
    pass


@dataclass(frozen=True)
class Case:
    name: str
    task: Task
    line: dict[str, Any]  # the results_metadata.jsonl line
    files: dict[str, bytes]  # instance folder contents


def official_score(official: Path, result_dir: Path, gold: Path) -> str:
    """'1', '0', 'pdb' or 'crash:<exception>' from the official run_evaluation."""
    sys.path.insert(0, str(official))
    try:
        evaluate = importlib.import_module("evaluate")
    finally:
        sys.path.remove(str(official))
    seen: list[dict[str, Any]] = []

    def capture(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seen.extend(items)
        return items

    def stop() -> None:
        raise PdbStop

    evaluate.tqdm = capture
    import pdb

    pdb.set_trace = stop  # type: ignore[assignment]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            evaluate.run_evaluation(str(result_dir), str(gold))
    except PdbStop:
        return "pdb"
    except ZeroDivisionError:
        pass  # nothing was scored (no common id): the final print divides by zero
    except Exception as exc:
        return f"crash:{type(exc).__name__}"
    scores = [item.get("score") for item in seen]
    return "1" if scores and scores[0] == 1 else "0"


def official_scores(official: Path, result_dir: Path, gold: Path) -> dict[str, float]:
    """{instance id: score} of every instance the official run_evaluation scored."""
    sys.path.insert(0, str(official))
    try:
        evaluate = importlib.import_module("evaluate")
    finally:
        sys.path.remove(str(official))
    seen: list[dict[str, Any]] = []

    def capture(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seen.extend(items)
        return items

    evaluate.tqdm = capture
    with contextlib.redirect_stdout(io.StringIO()):
        evaluate.run_evaluation(str(result_dir), str(gold))
    return {str(item["instance_id"]): float(item["score"]) for item in seen}


def gold_dir_agreement(
    official: Path, tasks: list[Task], gold_root: Path, work: Path, n: int, rng: random.Random
) -> dict[str, Any]:
    """`eval spider2 --gold-dir` on a gold folder of its own against the official run: `n` ids
    the built-in list lacks (each a real table task's entry and gold under a new id), answered
    by the gold table, a perturbed one, or through `../shared_files/` from a task folder that
    exists or not, some config ids not submitted and some submitted ids not in the config."""
    from typer.testing import CliRunner

    from querybench.cli import app

    gold, result = work / "gold", work / "result"
    for folder in (gold, result):
        shutil.rmtree(folder, ignore_errors=True)
    (result / "shared_files").mkdir(parents=True)
    entries, lines = [], []
    ways: dict[str, str] = {}
    chosen = [t for t in tasks if _single_table(t, gold_root)][:n]
    for index, task in enumerate(chosen):
        new_id = f"custom{index:04d}"
        check = task.gold.eval_params["evaluation"][0]
        name = check["parameters"]["gold"]
        shutil.copytree(gold_root / task.instance_id, gold / new_id)
        entries.append(
            {"instance_id": new_id, "evaluation": task.gold.eval_params["official_evaluation"]}
        )
        raw = (gold_root / task.instance_id / name).read_bytes()
        how = rng.choice(["gold", "perturbed", "shared, folder", "shared, no folder", "none"])
        ways[new_id] = how
        if how == "none":
            continue
        data = raw if how != "perturbed" else raw.rstrip(b"\n").rsplit(b"\n", 1)[0] + b"\n"
        if how.startswith("shared"):
            (result / "shared_files" / f"{new_id}.csv").write_bytes(data)
            if how == "shared, folder":
                (result / new_id).mkdir()
            answer = f"../shared_files/{new_id}.csv"
        else:
            (result / new_id).mkdir()
            (result / new_id / "out.csv").write_bytes(data)
            answer = "out.csv"
        lines.append({"instance_id": new_id, "answer_type": "file", "answer_or_path": answer})
    lines.append({"instance_id": "not_in_config", "answer_type": "answer", "answer_or_path": "1"})
    (gold / "spider2_eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    (result / "results_metadata.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    theirs = official_scores(official, result, gold)
    out = work / "ours.jsonl"
    args = ["eval", "spider2", "--predictions", str(result), "--gold-dir", str(gold)]
    ran = CliRunner().invoke(app, [*args, "--output", str(out)])
    assert ran.exit_code == 0, ran.output
    mine = [json.loads(x) for x in out.read_text().splitlines()]
    counted = {
        x["instance_id"]: x["official_score"] for x in mine if x["metrics"]["official_counted"]
    }
    return {
        "config ids": len(entries),
        "querybench lines": len(mine),
        "official scored": len(theirs),
        "same instances": set(theirs) == set(counted),
        "same verdicts": sum(theirs[i] == counted.get(i) for i in theirs),
        "official 1": sum(v == 1 for v in theirs.values()),
        "by answer (n, official 1, querybench 1)": {
            how: (
                sum(w == how for w in ways.values()),
                sum(theirs.get(i) == 1 for i, w in ways.items() if w == how),
                sum(counted.get(i) == 1 for i, w in ways.items() if w == how),
            )
            for how in sorted(set(ways.values()))
        },
    }


def _single_table(task: Task, gold_root: Path) -> bool:
    checks = task.gold.eval_params.get("evaluation", [])
    if len(checks) != 1 or checks[0]["func"] != "table_match":
        return False
    name = checks[0]["parameters"].get("gold")
    path = gold_root / task.instance_id / str(name)
    return isinstance(name, str) and path.is_file() and path.stat().st_size < 2_000_000


def ours(task: Task, result_dir: Path, gold: Path) -> tuple[str, str | None]:
    tasks = with_eval_config([task], gold / "spider2_eval.jsonl")
    result = evaluate_spider2_agentic(result_dir, tasks=tasks, gold_dir=gold, workers=1).results[0]
    return ("1" if result.official_score == 1 else "0"), result.error


def cases(tasks: list[Task], gold: Path, rng: random.Random) -> Iterator[Case]:
    for task in tasks:
        folder = gold / task.instance_id
        for check in task.gold.eval_params.get("evaluation", []):
            func, params = check["func"], check["parameters"]
            if func == "table_match":
                names = [params["gold"]] if isinstance(params["gold"], str) else params["gold"]
                for name in names:
                    if (folder / name).is_file():
                        yield from _table_cases(task, folder / name, rng)
                yield Case("text for a table", task, _line(task, "answer", "42"), {})
            elif func == "tables_match":
                names = params["gold"]
                if all((folder / n).is_file() for n in names):
                    files = {n: (folder / n).read_bytes() for n in names}
                    yield Case("gold tables", task, _line(task, "files", names), files)
                    yield Case("tables reversed", task, _line(task, "files", names[::-1]), files)
                    yield Case("tables as string", task, _line(task, "files", names[0]), files)
            elif func in ("string_match", "number_match"):
                for name, answer in _text_answers(func, params, rng):
                    yield Case(name, task, _line(task, "answer", answer), {})


def _line(task: Task, kind: str, answer: Any) -> dict[str, Any]:
    return {"instance_id": task.instance_id, "answer_type": kind, "answer_or_path": answer}


def _table_cases(task: Task, path: Path, rng: random.Random) -> Iterator[Case]:
    raw = path.read_bytes()
    if len(raw) > 2_000_000:
        return
    yield Case("gold table", task, _line(task, "file", "result.csv"), {"result.csv": raw})
    try:
        frame = pd.read_csv(io.BytesIO(raw), low_memory=False)
    except Exception:
        return
    variants: dict[str, pd.DataFrame] = {
        "rows shuffled": frame.sample(frac=1.0, random_state=rng.randrange(1000)),
        "columns reversed": frame[frame.columns[::-1]],
        "first column dropped": frame.iloc[:, 1:],
        "last row dropped": frame.iloc[:-1],
        "extra column": frame.assign(extra_col=1),
    }
    numeric = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])]
    if numeric:
        column = rng.choice(numeric)
        for delta in (0.004, 0.02):
            shifted = frame.copy()
            shifted[column] = shifted[column] + delta
            variants[f"{column} + {delta}"] = shifted
        nulled = frame.copy()
        nulled[column] = nulled[column].astype(object)
        nulled.iloc[0, frame.columns.get_loc(column)] = None
        variants["a number made null"] = nulled
        zero = frame.copy()
        zero[column] = zero[column].fillna(0)
        variants["nulls as zero"] = zero
    text = [c for c in frame.columns if frame[c].dtype == object]
    if text and frame.columns.is_unique:
        upper = frame.copy()
        upper[text[0]] = upper[text[0]].map(lambda v: v.upper() if isinstance(v, str) else v)
        variants["text upper-cased"] = upper
    for name, variant in variants.items():
        data = variant.to_csv(index=False).encode()
        yield Case(name, task, _line(task, "file", "result.csv"), {"result.csv": data})


def _text_answers(
    func: str, params: dict[str, Any], rng: random.Random
) -> Iterator[tuple[str, Any]]:
    gold = params.get("gold")
    items = gold if isinstance(gold, list) else [gold]
    words = [str(g) for g in items]
    yield "gold joined", ", ".join(words)
    yield "gold in a sentence", f"The answer is {' and '.join(words)}."
    yield "first gold only", words[0] if words else ""
    yield "upper-cased", ", ".join(words).upper()
    yield "empty answer", ""
    yield "number answer", 3.5
    if func == "number_match":
        for word in words:
            try:
                value = float(str(word).replace(",", "").replace("%", ""))
            except ValueError:
                continue
            yield "negated", f"-{value}"
            yield "as percent", f"{value}%"
            yield "times 100", f"{value * 100}"
            yield "divided by 100", f"{value / 100}"
            yield "rounded 2", f"{round(value, 2)}"
            yield "with another number", f"{value} (from 12 rows)"
            yield "plus 0.00005", f"{value + 0.00005}"
            yield "scientific", f"{value:e}"
            break


def run_case(
    case: Case, official: Path, gold_root: Path, work: Path
) -> tuple[str, str, str | None]:
    for folder in ("result", "gold"):
        shutil.rmtree(work / folder, ignore_errors=True)
    result_dir, gold = work / "result", work / "gold"
    (result_dir / case.task.instance_id).mkdir(parents=True)
    gold.mkdir()
    for name, data in case.files.items():
        (result_dir / case.task.instance_id / name).write_bytes(data)
    (result_dir / "results_metadata.jsonl").write_text(json.dumps(case.line) + "\n")
    raw = case.task.gold.eval_params["official_evaluation"]
    entry = {"instance_id": case.task.instance_id, "evaluation": raw}
    (gold / "spider2_eval.jsonl").write_text(json.dumps(entry) + "\n")
    (gold / case.task.instance_id).symlink_to(gold_root / case.task.instance_id)
    theirs = official_score(official, result_dir, gold)
    mine, error = ours(case.task, result_dir, gold)
    return theirs, mine, error


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--official-dir", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=0, help="at most this many cases")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--gold-dir-folder",
        type=int,
        default=0,
        metavar="N",
        help="instead: one gold folder of N ids the built-in list lacks, scored whole",
    )
    args = parser.parse_args()
    root = data_root()
    gold_root = gold_dir(root / "spider2")
    tasks = [t for t in load_tasks("spider2", data_dir=root) if t.gold.eval_params]
    rng = random.Random(args.seed)
    rng.shuffle(tasks)  # a --limit then samples every kind of task
    if args.gold_dir_folder:
        with tempfile.TemporaryDirectory() as tmp:
            found = gold_dir_agreement(
                args.official_dir, tasks, gold_root, Path(tmp), args.gold_dir_folder, rng
            )
        print(json.dumps(found, indent=1))
        return
    outcome: Counter[str] = Counter()
    disagreements = []
    with tempfile.TemporaryDirectory() as tmp:
        for index, case in enumerate(cases(tasks, gold_root, rng)):
            if args.limit and index >= args.limit:
                break
            theirs, mine, error = run_case(case, args.official_dir, gold_root, Path(tmp))
            stopped = theirs in ("pdb",) or theirs.startswith("crash")
            agree = (theirs == mine) if not stopped else error == "scorer_error"
            outcome["agree" if agree else "disagree"] += 1
            outcome[f"official {theirs}"] += 1
            if not agree:
                disagreements.append((case.task.instance_id, case.name, theirs, mine, error))
    print(json.dumps(dict(outcome), indent=1))
    for row in disagreements[:50]:
        print("DISAGREE", *row)


if __name__ == "__main__":
    main()
