"""Spider 1.0 execution match, scored as the official test-suite evaluation scores it.

The reference is taoyds/test-suite-sql-eval (`evaluation.py` calling `exec_eval.eval_exec_match`)
with its defaults, plug_value and keep_distinct off (both offered, with the official meaning:
`keep_distinct` keeps the DISTINCT tokens, `plug_value` also passes a prediction that passes with
the gold's values plugged into its value slots, see `values.py`):

* every "value" substring of the prediction's text becomes "1" (meant for the placeholder,
  it also hits a column named `value` or `value_id` and a 'value' string), and both queries
  get the same normalisation: "> =" style operators joined, every DISTINCT token dropped
  (which also keeps only the first statement), and YEAR(CURDATE()) replaced by 2020;
* results are compared as bags of rows, with the columns of the prediction free to be permuted;
* row order counts only when the (normalised) gold text contains "order by";
* a prediction that fails to run scores 0; the gold must run (the official script asserts).

The matchers are pure functions over rows; `evaluate_spider1` runs the official file formats.

The strict score differs in one reading only: it replaces the placeholder " value " (spaces
around it) and leaves every other "value" alone, so `SELECT max(value) FROM t` is run as
written. Where both readings give the same SQL the scores are one verdict.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from querybench import json_input
from querybench.benchmarks.spider1 import Spider1EvalOptions
from querybench.engines.base import Result
from querybench.errors import DataError, EngineError, ErrorCode
from querybench.evaluation.detail import Difference, Shape, VerdictDetail
from querybench.evaluation.execution import Jobs, run_gold_and_predictions
from querybench.evaluation.prediction_file import PREDICTIONS, oversized_answer, whole_file_text
from querybench.evaluation.record import InstanceResult, OnResult
from querybench.evaluation.row_keys import hash_safe
from querybench.evaluation.verdict import Verdict
from querybench.tasks.input_files import one_line, plain_name, read_text, text_lines
from querybench.tasks.model import Task
from querybench.tasks.spider1_hardness import spider1_hardness as spider1_hardness

if TYPE_CHECKING:
    from querybench.evaluation.spider1.exact import ExactMatch, ExactMatchFailure

Row = tuple[Any, ...]

# The tokens of sqlparse's lexer that can contain the letters "distinct" (or a ";") without
# being the DISTINCT keyword (or a statement end): comments, strings, quoted names, sigil
# names; then plain words and the punctuation that splits statements.
_TOKEN = re.compile(
    r"""
      (?P<comment>(?:--|\#\ )[^\r\n]*|/\*.*?\*/)
    | (?P<string>'(?:''|\\'|[^'])*'|"(?:""|\\"|[^"])*"|`(?:``|[^`])*`)
    | (?P<bracketed>(?<![\w\])])\[[^\]\[]+\])
    | (?P<cast>::)
    | (?P<sigil>(?<!\w)(?:\#\#|[@$:?\#])\w+)
    | (?P<word>\w[$\#\w]*)
    | (?P<punct>[();])
    """,
    re.VERBOSE | re.DOTALL,
)
_CUR_YEAR = re.compile(r"YEAR\s*\(\s*CURDATE\s*\(\s*\)\s*\)\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Spider1Queries:
    """A gold/prediction pair after the official normalisation, ready to execute."""

    gold_sql: str
    pred_sql: str
    order_matters: bool
    plugged: tuple[str, ...] = ()  # `plug_value`: the prediction with the gold's values in it


def remove_distinct(sql: str) -> str:
    """The first statement of `sql` without its DISTINCT keywords (whitespace is kept).

    The official `remove_distinct` rebuilds `sqlparse.parse(sql)[0]`: it drops every token
    that reads "distinct" and, as a side effect, everything after the first statement (a ";"
    outside strings, comments and parentheses ends it).
    """
    out = []
    last = 0
    depth = 0
    for match in _TOKEN.finditer(sql):
        token = match.group()
        if match.lastgroup == "word" and token.lower() == "distinct":
            out.append(sql[last : match.start()])
            last = match.end()
        elif match.lastgroup == "punct":
            depth += {"(": 1, ")": -1}.get(token, 0)
            if token == ";" and depth <= 0:
                out.append(sql[last : match.end()])
                return "".join(out)
    out.append(sql[last:])
    return "".join(out)


def join_split_operators(sql: str) -> str:
    """Mend "> =", "< =" and "! =", which some models emit (official `postprocess`)."""
    return sql.replace("> =", ">=").replace("< =", "<=").replace("! =", "!=")


def replace_cur_year(sql: str) -> str:
    """YEAR(CURDATE()) is MySQL; the official runner pins it to 2020 before executing."""
    return _CUR_YEAR.sub("2020", sql)


def replace_value(pred_sql: str, reading: Literal["official", "strict"] = "official") -> str:
    """The prediction's "value" placeholders as 1: officially every "value" substring (column
    names and strings included), strictly only " value " standing alone between spaces."""
    return (
        pred_sql.replace("value", "1")
        if reading == "official"
        else (pred_sql.replace(" value ", " 1 "))
    )


def prepare_spider1(
    gold_sql: str,
    pred_sql: str,
    *,
    keep_distinct: bool = False,
    plug_value: bool = False,
    reading: Literal["official", "strict"] = "official",
) -> Spider1Queries:
    """Normalise a gold/prediction pair as the official evaluation does before running
    (`reading="strict"`: the placeholder rule of the strict score, see the module text)."""
    pred = join_split_operators(replace_value(pred_sql, reading))
    gold = join_split_operators(gold_sql)
    if not keep_distinct:
        pred, gold = remove_distinct(pred), remove_distinct(gold)
    order_matters = "order by" in gold.lower()
    plugged: tuple[str, ...] = ()
    if plug_value:
        from querybench.evaluation.spider1.values import plugged_predictions

        ran = replace_cur_year(pred)
        plugged = tuple(
            q for q in map(replace_cur_year, plugged_predictions(gold, pred)) if q != ran
        )
    return Spider1Queries(replace_cur_year(gold), replace_cur_year(pred), order_matters, plugged)


def spider1_result_match(
    gold_rows: Sequence[Row], pred_rows: Sequence[Row], order_matters: bool
) -> bool:
    """Whether the prediction's rows denote the gold's, under the official `result_eq` rules.

    Same number of rows and columns; some permutation of the prediction's columns makes its rows
    equal to the gold's, as a sequence when `order_matters` and as a bag otherwise.
    """
    if pred_rows is gold_rows or (not gold_rows and not pred_rows):
        return True  # the very same rows: one query shared by gold and prediction
    if len(gold_rows) != len(pred_rows):
        return False
    if len(pred_rows[0]) != len(gold_rows[0]):
        return False
    if not _same_unordered_rows(gold_rows, pred_rows, order_matters):
        return False
    if pred_rows == gold_rows:
        # The identity permutation, which the official search tries and accepts: a correct
        # prediction usually returns the gold's very rows, and this spares the search.
        return True
    return _column_permutation_exists(gold_rows, pred_rows, order_matters)


def spider1_verdict(
    gold: Result | EngineError, pred: Result | EngineError, *, order_matters: bool
) -> Verdict:
    """Score one executed pair: the gold must have run, the prediction must run and match."""
    if isinstance(gold, EngineError):
        return Verdict.fail(ErrorCode.GOLD_ERROR, f"gold query failed: {gold}")
    if isinstance(pred, EngineError):
        return Verdict.engine_error(pred)
    if spider1_result_match(gold.rows, pred.rows, order_matters):
        return Verdict.ok()
    return _difference(gold.rows, pred.rows, order_matters)


def _difference(gold: Sequence[Row], pred: Sequence[Row], order_matters: bool) -> Verdict:
    def shape(rows: Sequence[Row]) -> Shape:
        return Shape(len(rows), len(rows[0]) if rows else 0)

    def words(s: Shape) -> str:
        return f"{s.rows} rows x {s.columns} columns"

    gold_shape, pred_shape = shape(gold), shape(pred)
    if len(gold) != len(pred) or (gold and len(gold[0]) != len(pred[0])):
        message = f"result shape differs: gold {words(gold_shape)}, prediction {words(pred_shape)}"
        return Verdict.fail(
            ErrorCode.WRONG_RESULT, message, VerdictDetail.of_shapes(pred_shape, [gold_shape])
        )
    if order_matters and _same_unordered_rows(gold, pred, order_matters=False):
        message = "same rows in a different order (the gold has ORDER BY)"
        detail = VerdictDetail.of_shapes(pred_shape, [gold_shape], Difference.WRONG_ORDER)
        return Verdict.fail(ErrorCode.WRONG_RESULT, message, detail)
    detail = VerdictDetail.of_shapes(pred_shape, [gold_shape], Difference.WRONG_VALUES)
    return Verdict.fail(ErrorCode.WRONG_RESULT, f"different values ({words(gold_shape)})", detail)


def _cell_key(value: Any) -> str:
    return str(value) + str(type(value))


def _same_unordered_rows(gold: Sequence[Row], pred: Sequence[Row], order_matters: bool) -> bool:
    # The official quick rejection: sort each row's cells by their text and type name, then
    # compare the rows as a sequence (order matters) or as a *set*. It is a necessary condition
    # in practice, and it is part of the contract even where it is not (1 vs 1.0 sort apart).
    if len(gold[0]) == 1:  # a one-cell row sorts to itself
        g, p = list(gold), list(pred)
    else:
        g = [tuple(sorted(row, key=_cell_key)) for row in gold]
        p = [tuple(sorted(row, key=_cell_key)) for row in pred]
    if order_matters:
        return g == p
    g_safe, p_safe = hash_safe(g, p)
    return set(g_safe) == set(p_safe)


def _column_permutation_exists(
    gold: Sequence[Row], pred: Sequence[Row], order_matters: bool
) -> bool:
    """Is there a bijection of columns under which the rows agree?

    The official code enumerates the full product of candidate columns; this finds the same
    answer with a backtracking search: a prediction column is a candidate for a gold column only
    if all its values occur there, two identical prediction columns are interchangeable (only
    one order is tried), and each partial assignment must already agree on the columns chosen.
    """
    width = len(gold[0])
    gold, pred = hash_safe(gold, pred, columns=True)
    gold_cols = list(zip(*gold, strict=True))
    pred_cols = list(zip(*pred, strict=True))
    gold_sets = [set(col) for col in gold_cols]
    candidates = [
        [j for j, col in enumerate(pred_cols) if set(col) <= gold_sets[i]] for i in range(width)
    ]
    twins_before = [[k for k in range(j) if pred_cols[k] == pred_cols[j]] for j in range(width)]
    used = [False] * width
    chosen: list[int] = []

    def agrees() -> bool:
        k = len(chosen)
        g = list(zip(*gold_cols[:k], strict=True))
        p = list(zip(*(pred_cols[j] for j in chosen), strict=True))
        return g == p if order_matters else Counter(g) == Counter(p)

    def search(i: int) -> bool:
        if i == width:
            return True
        for j in candidates[i]:
            if used[j] or any(not used[k] for k in twins_before[j]):
                continue
            used[j] = True
            chosen.append(j)
            if agrees() and search(i + 1):
                return True
            chosen.pop()
            used[j] = False
        return False

    return search(0)


# --- The official file formats --------------------------------------------------------------


PAST_END = Verdict.fail(
    ErrorCode.MISSING_PREDICTION,
    "no prediction line: the prediction file ends before this gold line",
)


@dataclass(frozen=True)
class Spider1Instance:
    instance_id: str
    gold_sql: str
    db_id: str
    pred_sql: str | None  # None: no prediction line (or an empty one)
    difficulty: str | None = None
    past_end: bool = False  # the prediction file ended before this gold line
    too_large: str | None = None  # why the prediction line is not scored (`oversized_answer`)


Gold = str | Path | Sequence[Task]
GoldLine = tuple[str, str, str, str | None]  # instance id, gold SQL, db_id, difficulty


def read_spider1_instances(
    gold_file: Gold, pred_file: str | Path, questions_json: str | Path | None = None
) -> list[Spider1Instance]:
    """Pair the gold file ("SQL<TAB>db_id" per line) with the predictions (one SQL per line).

    Lines are split as the official reader's `readlines()` splits them (`text_lines`), and as
    it does, a prediction line keeps its text before the first tab. Missing or empty
    prediction lines leave `pred_sql` None; so does one past `oversized_answer`'s bound (its
    reason in `too_large`); more predictions than gold is an error. With `questions_json`
    (Spider's dev.json), difficulty is the hardness of its parsed SQL. The gold may also be a
    benchmark's tasks (a Spider 1.0 variant's, whose data has no gold file): their gold SQL
    and database in order, each with its difficulty.
    """
    if isinstance(gold_file, str | Path):
        golds, named = _gold_file_lines(gold_file, questions_json), str(gold_file)
    else:
        golds = [(t.instance_id, one_line(t.gold.sql or ""), t.db, t.difficulty) for t in gold_file]
        named = f"the {gold_file[0].benchmark} tasks" if gold_file else "the tasks"
    pred_lines = _lines(pred_file, PREDICTIONS)
    if len(pred_lines) > len(golds):
        raise DataError(
            f"{pred_file} has {len(pred_lines)} prediction lines for {len(golds)} gold "
            f"queries in {named}"
        )
    instances = []
    for i, (instance_id, gold_sql, db_id, difficulty) in enumerate(golds):
        pred = pred_lines[i].strip().split("\t")[0] if i < len(pred_lines) else ""
        too_large = oversized_answer(pred)
        instances.append(
            Spider1Instance(
                instance_id,
                gold_sql,
                db_id,
                None if too_large else pred or None,
                difficulty,
                i >= len(pred_lines),
                too_large,
            )
        )
    return instances


def _gold_file_lines(gold_file: str | Path, questions_json: str | Path | None) -> list[GoldLine]:
    gold_lines = _lines(gold_file, "gold")
    hardness = _hardness_by_line(questions_json, gold_lines) if questions_json else {}
    out: list[GoldLine] = []
    for i, line in enumerate(gold_lines):
        fields = line.strip().split("\t")
        if len(fields) != 2 or not all(f.strip() for f in fields):
            raise DataError(f"{gold_file}:{i + 1}: expected 'SQL<TAB>db_id', got {line!r}")
        if not plain_name(fields[1]):  # `<db-dir>/<db_id>/<db_id>.sqlite` stays in the folder
            raise DataError(
                f"{gold_file}:{i + 1}: the database id {fields[1]!r} is not a plain name"
            )
        out.append((str(i), fields[0], fields[1], hardness.get(i)))
    return out


def _lines(path: str | Path, what: str) -> list[str]:
    lines = text_lines(whole_file_text(Path(path), what))  # not a FIFO, bounded
    while lines and not lines[-1].strip():
        lines.pop()
    if what == "gold" and any(not line.strip() for line in lines):
        raise DataError(
            f"{path}: blank line inside the gold file (multi-turn SParC/CoSQL files are not "
            "supported)"
        )
    return lines


def _hardness_by_line(questions_json: str | Path, gold_lines: list[str]) -> dict[int, str]:
    try:
        entries = json_input.loads(read_text(Path(questions_json), "questions"))
        pairs = [(e["query"], e["db_id"], e["sql"]) for e in entries]
    except DataError:
        raise
    except (ValueError, TypeError, KeyError) as exc:
        raise DataError(f"cannot read parsed SQL from {questions_json}: {exc!r}") from exc
    if len(pairs) != len(gold_lines):
        raise DataError(f"{questions_json} has {len(pairs)} entries for {len(gold_lines)} gold")
    out = {}
    for i, ((query, db_id, sql), line) in enumerate(zip(pairs, gold_lines, strict=True)):
        if line.strip().split("\t") != [query.strip(), db_id]:
            raise DataError(f"{questions_json} entry {i} does not match gold line {i + 1}")
        try:
            out[i] = spider1_hardness(sql)
        except (KeyError, IndexError, TypeError) as exc:
            raise DataError(f"{questions_json} entry {i}: malformed parsed SQL ({exc!r})") from exc
    return out


def evaluate_spider1(
    predictions: str | Path,
    *,
    gold: Gold,
    db_dir: str | Path | Sequence[Path],
    questions: str | Path | None = None,
    timeout: float | None = Spider1EvalOptions.timeout,
    workers: int = Spider1EvalOptions.workers,
    cache_dir: str | Path | None = None,
    on_result: OnResult | None = None,
    instance_ids: Collection[str] | None = None,
    metrics: Sequence[str] = tuple(Spider1EvalOptions.metrics.split(",")),
    tables: str | Path | None = None,
    plug_value: bool = Spider1EvalOptions.plug_value,
    keep_distinct: bool = Spider1EvalOptions.keep_distinct,
    _on_query: Callable[[], None] | None = None,
) -> list[InstanceResult]:
    """Score Spider 1.0 predictions in the official text formats; one result per gold line.

    The database of an instance is `db_dir/<db_id>/<db_id>.sqlite` (with several folders, in
    the first that holds it); `gold` the gold file or a Spider 1.0 variant's tasks. Like the
    official test-suite runner, the queries are compared on every `*.sqlite` file in that
    folder (a test-suite folder holds several; the plain release holds one) and pass only if
    they match on all.
    Gold results go through the result cache (see `run_gold_and_predictions`); difficulty needs
    `questions`, Spider's dev.json with the official parse of each gold query. `instance_ids`
    scores only those lines (a shard); `_on_query` is a progress tick after each query.
    `metrics` "ex" (execution match, the score, always computed) and "em" (exact match, the
    official `--etype match`: each result's `metrics["em"]` and `exact_match`), with EM's
    foreign keys from `tables` (tables.json; by default beside the gold or the databases).
    `plug_value` and `keep_distinct` are the official execution flags (module text); exact
    match does not depend on them.
    """
    instances = read_spider1_instances(gold, predictions, questions)
    if instance_ids is not None:
        wanted = set(instance_ids)
        instances = [i for i in instances if i.instance_id in wanted]
    searched = [Path(db_dir)] if isinstance(db_dir, str | Path) else [Path(d) for d in db_dir]
    gold_file = Path(gold) if isinstance(gold, str | Path) else searched[0]  # tables beside
    exact = _exact_matches(instances, metrics, gold_file, searched[0], tables)
    planned: dict[str, tuple[Spider1Queries, Spider1Queries, list[Path]]] = {}
    verdicts: dict[str, Verdict] = {}
    gold_jobs: Jobs = {}
    pred_jobs: Jobs = {}
    folders: dict[str, list[Path] | None] = {}  # db_id -> its databases (None: not found)
    for inst in instances:
        folder = next(
            (
                d / inst.db_id
                for d in searched
                if (d / inst.db_id / f"{inst.db_id}.sqlite").is_file()
            ),
            searched[0] / inst.db_id,
        )
        if inst.past_end:  # not submitted, whether or not its database is here
            verdicts[inst.instance_id] = PAST_END
            continue
        if inst.db_id not in folders:
            present = (folder / f"{inst.db_id}.sqlite").is_file()
            folders[inst.db_id] = (
                sorted(p for p in folder.iterdir() if p.name.endswith(".sqlite"))
                if present
                else None
            )
        databases = folders[inst.db_id]
        if databases is None:
            message = f"database not found: {folder / f'{inst.db_id}.sqlite'}"
            verdicts[inst.instance_id] = Verdict.fail(ErrorCode.ENGINE_UNAVAILABLE, message)
            continue
        if inst.too_large is not None:
            verdicts[inst.instance_id] = Verdict.fail(ErrorCode.TOO_LARGE, inst.too_large)
            continue
        if inst.pred_sql is None:
            verdicts[inst.instance_id] = Verdict.fail(
                ErrorCode.MISSING_PREDICTION, "no prediction line"
            )
            continue
        queries, strict = (
            prepare_spider1(
                inst.gold_sql,
                inst.pred_sql,
                keep_distinct=keep_distinct,
                plug_value=plug_value,
                reading=reading,
            )
            for reading in ("official", "strict")
        )
        planned[inst.instance_id] = (queries, strict, databases)
        for k, db in enumerate(databases):
            gold_jobs[f"{inst.instance_id}:{k}"] = (db, queries.gold_sql)
            pred_jobs[f"{inst.instance_id}:{k}"] = (db, queries.pred_sql)
            for j, plugged in enumerate(queries.plugged):
                pred_jobs[f"{inst.instance_id}:{k}:plug{j}"] = (db, plugged)
            if strict.pred_sql != queries.pred_sql:  # run only where the readings differ
                pred_jobs[f"{inst.instance_id}:{k}:strict"] = (db, strict.pred_sql)
                for j, plugged in enumerate(strict.plugged):
                    pred_jobs[f"{inst.instance_id}:{k}:strict:plug{j}"] = (db, plugged)
    gold_runs, pred = run_gold_and_predictions(
        gold_jobs,
        pred_jobs,
        timeout=timeout,
        workers=workers,
        cache_dir=cache_dir,
        on_query=_on_query,
    )
    strict_verdicts: dict[str, Verdict] = {}
    for iid, (queries, strict, dbs) in planned.items():
        pairs = [(gold_runs[f"{iid}:{k}"], pred[f"{iid}:{k}"], db) for k, db in enumerate(dbs)]

        verdicts[iid] = _first_pass(iid, "", pairs, pred, queries)
        if strict.pred_sql != queries.pred_sql:
            strict_verdicts[iid] = _first_pass(iid, ":strict", pairs, pred, strict)
            if not verdicts[iid].passed:
                verdicts[iid] = _say_value_rule(verdicts[iid], strict_verdicts[iid])
    out = []
    for inst in instances:
        verdict = verdicts[inst.instance_id]
        strict_score = strict_verdicts.get(inst.instance_id, verdict).score
        em = exact.get(inst.instance_id)
        difficulty = inst.difficulty or getattr(em, "hardness", None)
        result = InstanceResult(
            inst.instance_id,
            verdict.score,
            verdict.error,
            verdict.message,
            official_score=verdict.score,
            strict_score=strict_score,
            difficulty=difficulty,
            engine="sqlite",
            metrics={} if em is None else {"em": float(em.score)},
            detail=verdict.detail,
            exact_match=em,
        )
        out.append(result)
        if on_result is not None:
            on_result(result)
    return out


def _exact_matches(
    instances: Sequence[Spider1Instance],
    metrics: Sequence[str],
    gold: Path,
    db_dir: Path,
    tables: str | Path | None,
) -> dict[str, ExactMatch | ExactMatchFailure]:
    unknown = sorted(set(metrics) - {"ex", "em"})
    if unknown:
        raise DataError(f"unknown Spider 1.0 metric {unknown[0]!r}; choose from ex, em")
    if "em" not in metrics:
        return {}
    from querybench.evaluation.spider1.exact_eval import (
        ExactMatchInput,
        default_tables_json,
        exact_matches,
    )

    tables_json = Path(tables) if tables is not None else default_tables_json(gold, db_dir)
    if tables_json is None:
        raise DataError(
            f"exact match needs Spider's tables.json (foreign keys): none beside {gold} or in "
            f"{db_dir}; pass its path"
        )
    inputs = [ExactMatchInput(i.instance_id, i.gold_sql, i.db_id, i.pred_sql) for i in instances]
    return exact_matches(inputs, db_dir=db_dir, tables_json=tables_json)


def _say_value_rule(official: Verdict, strict: Verdict) -> Verdict:
    """The official failure, saying that the official "value" rule rewrote the prediction."""
    note = (
        'the official rule rewrote every "value" in the prediction to "1"; '
        f"read as written (strict) it {'passes' if strict.passed else 'fails too'}"
    )
    return Verdict.fail(
        official.error or ErrorCode.WRONG_RESULT, f"{official.message} ({note})", official.detail
    )


def _first_pass(
    iid: str,
    reading: str,
    pairs: list[tuple[Result | EngineError, Result | EngineError, Path]],
    pred: dict[str, Result | EngineError],
    queries: Spider1Queries,
) -> Verdict:
    """The prediction's verdict in `reading` ("" or ":strict"); failing, a pass when one of its
    plugged versions (`--plug_value`) passes on every database."""

    def on_every_database(key: str) -> Verdict:
        runs = [(g, pred[f"{iid}:{k}{key}"], db) for k, (g, _, db) in enumerate(pairs)]
        return _combine(runs, queries.order_matters)

    verdict = on_every_database(reading)
    plugged = (f"{reading}:plug{j}" for j in range(len(queries.plugged)))
    if not verdict.passed and any(on_every_database(key).passed for key in plugged):
        return Verdict.ok()
    return verdict


def _combine(
    pairs: list[tuple[Result | EngineError, Result | EngineError, Path]], order_matters: bool
) -> Verdict:
    """All databases must pass; a failing gold anywhere outranks the prediction's failures."""
    verdicts = [(spider1_verdict(g, p, order_matters=order_matters), db) for g, p, db in pairs]
    failed = [(v, db) for v, db in verdicts if not v.passed]
    if not failed:
        return Verdict.ok()
    verdict, db = next(((v, db) for v, db in failed if v.error == ErrorCode.GOLD_ERROR), failed[0])
    if len(pairs) == 1:
        return verdict
    message = f"on {db.name}: {verdict.message}"
    return Verdict.fail(verdict.error or ErrorCode.WRONG_RESULT, message, verdict.detail)
