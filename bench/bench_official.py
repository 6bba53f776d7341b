"""querybench against the official evaluation scripts, whole process against whole process.

Each work is timed in turn (official, querybench, official, querybench, ...) so that load on the
machine falls on both alike; the figure is the median wall time of each side and their ratio.
The official scripts are never vendored: point the script at checkouts of them.

    python -m bench.bench_official --official-spider2 SPIDER2 --official-test-suite TEST_SUITE \\
        --official-bird MINI_DEV --official-python /tmp/official-venv/bin/python \\
        [--works sample,lite,snow,spider1,bird,bird-small] [--rounds 5] \\
        [--predictions gold|perturbed|fresh] [--cold]

SPIDER2 is a checkout of xlang-ai/Spider2 (`spider2-lite/evaluation_suite/evaluate.py` and the
`spider2-lite.jsonl` beside it), TEST_SUITE of taoyds/test-suite-sql-eval, MINI_DEV of
bird-bench/mini_dev (`evaluation/evaluation_ex.py`); --official-python a Python with their
requirements. The test suite's tokenizer needs nltk's `punkt_tab` data, which PyPI does not carry:
an `english/` folder of five empty files (abbrev_types.txt, collocations.tab, ortho_context.tab,
sent_starters.txt, sentence_starters.txt) under `$NLTK_DATA/tokenizers/punkt_tab/` is enough for
SQL text.

Works (inputs built from the data under $QUERYBENCH_DATA):
  sample   the README's first command: the official 6-CSV spider2-lite sample submission
  lite     all spider2-lite instances, each instance's first gold CSV as its prediction
  snow     the same for spider2-snow
  spider1  Spider 1.0 dev, gold as prediction, questions whose database is present (--etype exec)
  bird     BIRD EX (`evaluation_ex.py`) on a BIRD-layout folder built from the Spider 1.0 databases
           (BIRD's own databases are not in the data), gold as prediction: BIRD dev's size, 1,534
           questions (the 972 Spider 1.0 dev questions whose database is present, cycled)
  bird-small  the same, its first 100 questions (a small job: start-up dominates)

`--predictions perturbed` (spider1, bird) turns each prediction into another text of the same
query (its leading SELECT in the other case), so that no prediction is its gold's very text and
every one runs, as real predictions do; with `gold`, querybench runs a query shared by a gold and
its prediction once. For lite and snow it changes each CSV one of seven ways (`_perturbed_csvs`:
rows reversed, a row dropped, a number moved, ...), so that no prediction is a gold file's bytes.
`--predictions fresh` (lite) is a researcher's repeated work, new predictions against the same
gold: every round is a new submission of all 547 instances (`_fresh_csvs`: each instance's first
gold CSV with an extra column of that round's salt, and half of the instances, chosen by the
salt, wrong by one cell), so that no file's bytes were seen before. Before the rounds
querybench scores a submission of another salt, so that a warm run's caches hold the gold and
earlier predictions, never these. Every round both sides' verdicts are compared, instance by
instance (the official's printed scores against querybench's results file): any difference
stops the bench.
`--cold` gives each querybench run an empty cache ($QUERYBENCH_CACHE in a fresh folder: query
results, parsed gold and prediction CSVs); without it, every run after the first is warm. Besides
the wall times, each side's CPU seconds (user + system, its child processes included, and on
Linux the processes it leaves behind, such as multiprocessing's forkserver, which this script
adopts and waits for) are printed: on a loaded machine they say more about the work done than
the wall time does.

Without a checkout for a work, that work is skipped with the reason. Missing Python packages of
the official scripts (google-cloud-bigquery, snowflake-connector-python, tqdm, nltk, sqlparse,
func_timeout, psycopg2-binary, pymysql) make the official side fail: the script prints its
stderr and goes on.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from querybench.data.roots import data_root

# The console script a user runs (`python -m querybench.cli` does not call main()).
QUERYBENCH = [str(Path(sys.executable).parent / "querybench")]


@dataclass(frozen=True)
class Work:
    """One side-by-side timing: the two commands, run in `cwd`. `fresh`, when set, rewrites
    the predictions for a round (untimed) given its salt, and `check` compares the two sides'
    verdicts after it (official stdout, querybench's results file); a warm-up round of another
    salt then precedes the timed ones."""

    name: str
    official: list[str]
    ours: list[str]
    cwd: Path
    fresh: Callable[[str], None] | None = None
    check: Callable[[str], int] | None = None


@dataclass(frozen=True)
class Timing:
    name: str
    official: list[float]
    ours: list[float]
    official_error: str
    official_cpu: list[float]
    ours_cpu: list[float]

    @property
    def ratio(self) -> float:
        return statistics.median(self.official) / statistics.median(self.ours)


def _first_gold_csvs(gold_dir: Path, into: Path) -> None:
    """Each instance's first gold CSV (the base file, else `_a`) as its prediction."""
    into.mkdir(parents=True, exist_ok=True)
    best: dict[str, Path] = {}
    for path in sorted((gold_dir / "exec_result").glob("*.csv")):
        stem = path.stem
        iid = stem.rsplit("_", 1)[0] if stem[-2:-1] == "_" and stem[-1].isalpha() else stem
        best.setdefault(iid, path)
    for iid, path in best.items():
        shutil.copy(path, into / f"{iid}.csv")


def _perturbed_csvs(folder: Path) -> None:
    """Each CSV changed in place in one of seven ways (chosen by its name), so that no
    prediction is a gold file's very bytes and a fifth or so of them fail: rows reversed
    (twice as often), the last row dropped, the columns reversed, the first number + 0.5,
    text upper-cased, an extra column."""
    for path in sorted(folder.glob("*.csv")):
        rows = list(csv.reader(io.StringIO(path.read_bytes().decode("utf-8", "replace"))))
        if not rows:
            continue
        head, body = rows[0], rows[1:]
        way = zlib.crc32(path.name.encode()) % 7
        if way == 1:
            body = body[:-1]
        elif way == 2 and len(head) > 1:
            head, body = head[::-1], [r[::-1] for r in body]
        elif way == 3:
            for j, cell in enumerate(body[0] if body else []):
                with contextlib.suppress(ValueError):
                    body[0][j] = str(float(cell) + 0.5)
                    break
        elif way == 4:
            body = [[c.upper() for c in r] for r in body]
        elif way == 5:
            head, body = [*head, "extra"], [[*r, "x"] for r in body]
        else:
            body = body[::-1]
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(head)
        writer.writerows(body)
        path.write_bytes(out.getvalue().encode())


def _fresh_csvs(source: Path, into: Path, salt: str) -> None:
    """`source`'s CSVs written to `into` anew: each with an extra column `salt_<salt>` of
    per-row salted text, and half of them (by the salt's hash of the name) with one cell
    changed (the first row's first cell: a number + 1000, else text with `!` appended)."""
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    for path in sorted(source.glob("*.csv")):
        rows = list(csv.reader(io.StringIO(path.read_bytes().decode("utf-8", "replace"))))
        if not rows:
            (into / path.name).write_bytes(path.read_bytes())
            continue
        head, body = rows[0], rows[1:]
        head = [*head, f"salt_{salt}"]
        body = [[*r, f"{salt}-{i}"] for i, r in enumerate(body)]
        if body and body[0] and zlib.crc32(f"{salt}/{path.name}".encode()) % 2:
            cell = body[0][0]
            try:
                body[0][0] = repr(float(cell) + 1000)
            except ValueError:
                body[0][0] = cell + "!"
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(head)
        writer.writerows(body)
        (into / path.name).write_bytes(out.getvalue().encode())


def _official_scores(stdout: str) -> dict[str, float]:
    """The `{instance_id: score}` dict the official `evaluate.py` prints."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("{") and line.endswith("}"):
            scores: dict[str, float] = ast.literal_eval(line)
            return scores
    raise SystemExit("the official script printed no scores")


def _compare_verdicts(official_stdout: str, ours: Path) -> int:
    """How many instances were compared; stops the bench on any differing verdict."""
    official = _official_scores(official_stdout)
    mine = {}
    for line in ours.read_text().splitlines():
        row = json.loads(line)
        mine[row["instance_id"]] = row["official_score"]
    differ = sorted(i for i in official if float(official[i]) != float(mine.get(i, -1)))
    if differ:
        raise SystemExit(f"verdicts differ from the official on {len(differ)}: {differ[:20]}")
    return len(official)


def _spider2_work(
    name: str, variant: str, official_dir: Path, py: str, tmp: Path, predictions: str
) -> Work:
    root = data_root() / "spider2" / f"spider2-{variant}" / "evaluation_suite"
    gold = root / "gold"
    fresh = check = None
    if name == "sample":
        preds = root / "example_submission_folder_csv"
    else:
        preds = tmp / f"{name}-pred"
        _first_gold_csvs(gold, preds)
        if predictions == "perturbed":
            _perturbed_csvs(preds)
        elif predictions == "fresh":
            base, preds = preds, tmp / f"{name}-fresh"
            output = tmp / f"{name}.jsonl"

            def fresh(salt: str) -> None:
                _fresh_csvs(base, preds, salt)

            def check(official_stdout: str) -> int:
                return _compare_verdicts(official_stdout, output)

    script = official_dir / f"spider2-{variant}" / "evaluation_suite" / "evaluate.py"
    official = [py, str(script), "--mode", "exec_result", "--result_dir", str(preds)]
    official += ["--gold_dir", str(gold), "--max_workers", "2"]
    ours = [*QUERYBENCH, "eval", f"spider2-{variant}", "--predictions", str(preds)]
    ours += ["--gold-dir", str(gold), "--output", str(tmp / f"{name}.jsonl")]
    # snow's script opens `../spider2-snow.jsonl` relative to the working directory
    return Work(name, official, ours, script.parent, fresh, check)


def _perturbed(sql: str) -> str:
    """The same query in another text: its leading SELECT in the other case."""
    head = sql[:6]
    if head.lower() != "select":
        return sql
    return ("select" if head == "SELECT" else "SELECT") + sql[6:]


def _spider1_gold(tmp: Path, perturb: bool = False) -> tuple[Path, Path, Path]:
    """Gold lines whose database is present, a prediction file of the same SQL (`_perturbed`
    with `perturb`), the db folder."""
    spider1 = data_root() / "spider1"
    lines = (spider1 / "dev_gold.sql").read_text().splitlines()
    kept = [x for x in lines if x.strip() and (spider1 / x.rsplit("\t", 1)[1]).is_dir()]
    gold = tmp / "spider1_gold.sql"
    gold.write_text("\n".join(kept) + "\n")
    pred = tmp / "spider1_pred.sql"
    sqls = [x.rsplit("\t", 1)[0] for x in kept]
    pred.write_text("\n".join(_perturbed(x) if perturb else x for x in sqls) + "\n")
    return gold, pred, spider1


def _spider1_work(official_dir: Path, py: str, tmp: Path, perturb: bool) -> Work:
    gold, pred, db = _spider1_gold(tmp, perturb)
    tables = data_root() / "spider1" / "tables.json"
    official = [py, str(official_dir / "evaluation.py"), "--gold", str(gold), "--pred", str(pred)]
    official += ["--db", str(db), "--table", str(tables), "--etype", "exec"]
    ours = [*QUERYBENCH, "eval", "spider1", "--gold", str(gold), "--predictions", str(pred)]
    ours += ["--db-dir", str(db), "--output", str(tmp / "spider1.jsonl")]
    return Work("spider1", official, ours, official_dir)


# BIRD dev's question count; `bird-small` is a job where start-up dominates.
BIRD_SIZES = {"bird": 1534, "bird-small": 100}


def _bird_work(name: str, official_dir: Path, py: str, tmp: Path, perturb: bool) -> Work:
    """BIRD's file formats over the Spider 1.0 databases (BIRD's own are not in the data),
    the Spider 1.0 questions cycled to `BIRD_SIZES[name]`."""
    spider1_gold, _, db = _spider1_gold(tmp)
    lines = spider1_gold.read_text().splitlines()
    lines = [lines[i % len(lines)] for i in range(BIRD_SIZES[name])]
    tmp = tmp / name
    tmp.mkdir(exist_ok=True)
    gold = tmp / "bird_gold.sql"
    gold.write_text("\n".join(lines) + "\n")
    pairs = [x.rsplit("\t", 1) for x in lines]
    questions = [
        {
            "question_id": i,
            "db_id": d,
            "question": "",
            "evidence": "",
            "SQL": s,
            "difficulty": ("simple", "moderate", "challenging")[i % 3],
        }
        for i, (s, d) in enumerate(pairs)
    ]
    qfile = tmp / "bird_dev.json"
    qfile.write_text(json.dumps(questions))
    diff = tmp / "bird_diff.jsonl"
    diff.write_text("".join(json.dumps(q) + "\n" for q in questions))
    pred = tmp / "bird_predict.json"
    entries = {
        str(i): f"{_perturbed(s) if perturb else s}\t----- bird -----\t{d}"
        for i, (s, d) in enumerate(pairs)
    }
    pred.write_text(json.dumps(entries))
    script = official_dir / "evaluation" / "evaluation_ex.py"
    official = [py, str(script), "--predicted_sql_path", str(pred)]
    official += ["--ground_truth_path", str(gold)]
    official += ["--db_root_path", f"{db}/", "--num_cpus", "2", "--diff_json_path", str(diff)]
    official += ["--output_log_path", str(tmp / "bird_official.log")]
    ours = [*QUERYBENCH, "eval", "bird", "--questions", str(qfile), "--predictions", str(pred)]
    ours += ["--db-dir", str(db), "--output", str(tmp / "bird.jsonl")]
    return Work(name, official, ours, official_dir / "evaluation")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _adopt_orphans() -> None:
    """Become the reaper of orphaned descendants (Linux), so that a process a command leaves
    running (multiprocessing's forkserver, which outlives querybench by a moment) is waited
    for and its CPU counted, as the official scripts' pool workers are."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def _reap_orphans() -> None:
    try:
        while True:
            os.wait()
    except ChildProcessError:
        pass


def _wall(
    cmd: list[str], cwd: Path, env: dict[str, str] | None = None
) -> tuple[float, float, str, str]:
    """Wall seconds, CPU seconds (the process and the children it waited for), error text,
    stdout."""
    cpu = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False, env=env)
    elapsed = time.perf_counter() - start
    _reap_orphans()
    # The Spider 2.0 scripts send stderr to stdout (their TeeOutput): keep both.
    error = (proc.stdout + proc.stderr)[-2000:] if proc.returncode else ""
    return elapsed, _children_cpu() - cpu, error, proc.stdout


def time_work(work: Work, rounds: int, cold: bool = False) -> Timing:
    official: list[float] = []
    ours: list[float] = []
    official_cpu: list[float] = []
    ours_cpu: list[float] = []
    error = ""
    checked = 0
    with tempfile.TemporaryDirectory() as warm_cache:
        warm_env = {**os.environ, "QUERYBENCH_CACHE": warm_cache}
        if work.fresh is not None:  # caches warm from another submission, untimed
            work.fresh("warmup")
            if err := _wall(work.ours, work.cwd, warm_env)[2]:
                raise SystemExit(f"querybench failed on {work.name}:\n{err}")
        for index in range(rounds):
            if work.fresh is not None:
                work.fresh(f"r{index}")
            seconds, cpu, err, stdout = _wall(work.official, work.cwd)
            official.append(seconds)
            official_cpu.append(cpu)
            error = error or err
            with tempfile.TemporaryDirectory() as cache:
                env: dict[str, str] | None = warm_env
                if cold:
                    env = {**os.environ, "QUERYBENCH_CACHE": cache}
                elif work.fresh is None:
                    env = None  # the user's own cache, as before
                seconds, cpu, err, _ = _wall(work.ours, work.cwd, env)
            if err:
                raise SystemExit(f"querybench failed on {work.name}:\n{err}")
            ours.append(seconds)
            ours_cpu.append(cpu)
            if work.check is not None and not err:
                checked += work.check(stdout)
    if checked:
        print(f"{work.name}: verdicts identical to the official on all {checked}")
    return Timing(work.name, official, ours, error, official_cpu, ours_cpu)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--official-spider2", type=Path)
    parser.add_argument("--official-test-suite", type=Path)
    parser.add_argument("--official-bird", type=Path)
    parser.add_argument("--official-python", default=sys.executable)
    parser.add_argument("--works", default="sample,lite,snow,spider1,bird")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--predictions", choices=("gold", "perturbed", "fresh"), default="gold")
    parser.add_argument("--cold", action="store_true", help="an empty result cache per run")
    args = parser.parse_args()
    _adopt_orphans()
    py = args.official_python
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        works: list[Work] = []
        for work in args.works.split(","):
            if work in ("sample", "lite", "snow"):
                if args.official_spider2 is None:
                    print(f"{work}: skipped (no --official-spider2)")
                    continue
                variant = "snow" if work == "snow" else "lite"
                works.append(
                    _spider2_work(work, variant, args.official_spider2, py, tmp, args.predictions)
                )
            elif work == "spider1" or work in BIRD_SIZES:
                flag, official = (
                    ("test-suite", args.official_test_suite)
                    if work == "spider1"
                    else ("bird", args.official_bird)
                )
                if official is None:
                    print(f"{work}: skipped (no --official-{flag})")
                    continue
                perturb = args.predictions == "perturbed"
                if work == "spider1":
                    works.append(_spider1_work(official, py, tmp, perturb))
                else:
                    works.append(_bird_work(work, official, py, tmp, perturb))
            else:
                parser.error(f"unknown work {work!r}")
        print(
            f"load average at start: {os.getloadavg()[0]:.2f}; {args.rounds} rounds, A B A B; "
            f"predictions {args.predictions}; querybench cache {'cold' if args.cold else 'warm'}"
        )
        print(
            f"{'work':10} {'official s (median)':>20} {'querybench s (median)':>22} {'ratio':>7}"
            f" {'CPU s official':>15} {'CPU s querybench':>17}"
        )
        for work in works:
            t = time_work(work, args.rounds, args.cold)
            if t.official_error:
                print(f"{t.name}: the official script failed:\n{t.official_error}")
            print(
                f"{t.name:10} {statistics.median(t.official):20.2f} "
                f"{statistics.median(t.ours):22.2f} {t.ratio:6.2f}x"
                f" {statistics.median(t.official_cpu):15.2f}"
                f" {statistics.median(t.ours_cpu):17.2f}"
            )
        print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
