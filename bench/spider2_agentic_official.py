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

from querybench.data import data_root
from querybench.evaluation.spider2_agentic_eval import evaluate_spider2_agentic
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
    args = parser.parse_args()
    root = data_root()
    gold_root = gold_dir(root / "spider2")
    tasks = [t for t in load_tasks("spider2", data_dir=root) if t.gold.eval_params]
    rng = random.Random(args.seed)
    rng.shuffle(tasks)  # a --limit then samples every kind of task
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
