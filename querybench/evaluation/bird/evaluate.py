"""BIRD execution match, scored as the official BIRD evaluation scores it.

The official rule (`evaluation.py` of the BIRD release) is `set(pred_rows) == set(gold_rows)`:
row order and duplicate rows are ignored, column order and the driver's exact values are kept.
A prediction that errors or times out scores 0.

Each instance also carries three 0/1 metrics:

* `error`: no SQL could be taken from the prediction, or it failed, or it timed out;
* `trivial`: the prediction's rows, as a set, are empty or a single 0, 1 or NULL (whatever the
  row count), an answer a wrong or question-blind query can hit by accident, so a match on it
  says little;
* `gold_error`: the gold query itself failed; the instance then scores 0.

With `metrics`, mini-dev's `soft_f1` and `r_ves` join them (`metrics.py`), and the
databases may be on a MySQL or PostgreSQL server (`db_url`).
"""

from __future__ import annotations

import functools
import json
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from querybench import json_input
from querybench.benchmarks.bird import BirdEvalOptions
from querybench.engines.base import Result
from querybench.engines.cache import ResultCache
from querybench.engines.registry import EngineKind, spec_for_scheme
from querybench.errors import DataError, EngineError, ErrorCode
from querybench.evaluation.bird import run_cache as bird_run_cache
from querybench.evaluation.bird.metrics import (
    BirdMetric,
    TimedPair,
    measure_rewards,
    r_ves_value,
    soft_f1,
)
from querybench.evaluation.detail import Difference, Shape, VerdictDetail
from querybench.evaluation.execution import run_gold_and_predictions
from querybench.evaluation.prediction_file import PREDICTIONS, oversized_answer, whole_file_text
from querybench.evaluation.record import InstanceResult, OnResult
from querybench.evaluation.row_keys import hash_safe
from querybench.evaluation.sql_extract import extract_sql
from querybench.evaluation.verdict import Verdict
from querybench.tasks.input_files import plain_name

Row = tuple[Any, ...]

# The official prediction value is "<SQL>\t----- bird -----\t<db_id>".
BIRD_SEPARATOR = "\t----- bird -----\t"
_TRIVIAL_CELLS = (0, 1, None)


@dataclass(frozen=True)
class BirdQuestion:
    question_id: str
    db_id: str
    gold_sql: str
    difficulty: str | None = None


@dataclass(frozen=True)
class BirdPrediction:
    """One prediction entry: the SQL found in it (None when there is none) and its db_id."""

    sql: str | None
    db_id: str | None = None


def bird_result_match(gold_rows: Sequence[Row], pred_rows: Sequence[Row]) -> bool:
    """The official comparison: the same set of rows (order and duplicates ignored)."""
    # The very same rows (one query shared by gold and prediction) are their own set.
    if pred_rows is gold_rows:
        return True
    gold, pred = hash_safe(gold_rows, pred_rows)
    return set(pred) == set(gold)


def is_trivial_result(rows: Iterable[Row]) -> bool:
    """The rows, as the set BIRD compares, are empty or one single cell 0, 1 or NULL.

    Row count does not matter: `SELECT 0 FROM t` gives many rows of 0, which set equality
    collapses into one, so it matches a gold of a single 0 without reading the question.
    """
    seen: Row | None = None
    for row in rows:
        if (seen is not None and row != seen) or not _trivial_row(row):
            return False
        seen = row
    return True


def _trivial_row(row: Row) -> bool:
    if len(row) != 1:
        return False
    cell = row[0]
    return cell is None or (isinstance(cell, int | float) and cell in _TRIVIAL_CELLS)


@dataclass(frozen=True)
class StreamedMatch:
    """What comparing a prediction's rows batch by batch against the gold set found.

    `rows_read` counts the rows compared: the comparison stops at the first row that is not a
    gold row, so a huge wrong result is never read to its end. `gold_distinct` is the number
    of distinct gold rows, known from the gold set the comparison used (a verdict that names it
    does not build that set again for every wrong answer).
    """

    matched: bool
    trivial: bool
    rows_read: int
    gold_distinct: int


def bird_stream_match(
    gold_rows: Sequence[Row] | AbstractSet[Row], batches: Iterable[Sequence[Row]]
) -> StreamedMatch:
    """`bird_result_match` on a prediction read in batches, holding one batch at a time.

    The same set rule: every row must be a gold row (else stop, no match) and every gold row
    must have been seen by the end. `trivial` is `is_trivial_result` of the prediction: after a
    mismatch, reading goes on only while every row is the same single 0, 1 or NULL (stopping
    at the first other row); if the timeout or row cap cuts that short, the rows read decide.
    `gold_rows` may be given as the set of gold rows already (a reward scoring many answers
    against one gold builds it once). `StreamMatcher` is the rule, for batches pushed to it.
    """
    matcher = StreamMatcher(gold_rows)
    try:
        for batch in batches:
            if not matcher.feed(batch):
                break
    except EngineError:
        if not matcher.mismatched:  # timed out or capped after a mismatch: the rows read decide
            raise
    return matcher.result()


class StreamMatcher:
    """`bird_stream_match` fed one batch at a time: `feed` (an engine's `feed_batches` sink)
    says whether to read on, `result` what was found. An error while reading fails the
    prediction unless it comes after a mismatch (`mismatched`), when the rows read decide."""

    __slots__ = ("gold", "last", "read", "seen", "stopped_at", "trivial")

    def __init__(self, gold_rows: Sequence[Row] | AbstractSet[Row]) -> None:
        self.gold = gold_rows if isinstance(gold_rows, AbstractSet) else set(gold_rows)
        self.seen: set[Row] = set()
        self.read = 0
        self.stopped_at = 0  # rows compared up to the first foreign one (0: none yet)
        self.trivial = False  # after a mismatch: the prediction is trivial so far
        self.last: Row = ()

    @property
    def mismatched(self) -> bool:
        return self.stopped_at > 0

    def feed(self, batch: Sequence[Row]) -> bool:
        if self.stopped_at:  # only to learn whether the prediction is trivial
            self.trivial = is_trivial_result([self.last, *batch])
            return self.trivial
        gold = self.gold
        distinct = set(batch)  # a batch of gold rows, the common case, is checked at C speed
        if distinct <= gold:
            if self.seen:
                self.seen |= distinct
            else:
                self.seen = distinct
            self.read += len(batch)
            return True
        for index, row in enumerate(batch):
            if row not in gold:
                seen = self.seen
                seen.update(batch[:index])
                self.stopped_at = self.read + index + 1
                if len(seen) > 1 or not is_trivial_result([*seen, row]):
                    return False
                self.trivial, self.last = is_trivial_result(batch[index:]), row
                return self.trivial
        raise AssertionError("a batch with a foreign row has one")  # pragma: no cover

    def result(self) -> StreamedMatch:
        gold = len(self.gold)
        if self.stopped_at:
            return streamed_match(False, self.trivial, self.stopped_at, gold)
        seen = self.seen
        return streamed_match(len(seen) == gold, is_trivial_result(seen), self.read, gold)


@functools.lru_cache(maxsize=4096)
def streamed_match(
    matched: bool, trivial: bool, rows_read: int, gold_distinct: int
) -> StreamedMatch:
    """`StreamedMatch(...)`, one frozen instance per value: a reward makes one for every answer,
    of few distinct values (a frozen dataclass costs microseconds to build)."""
    return StreamedMatch(matched, trivial, rows_read, gold_distinct)


@functools.lru_cache(maxsize=4096)
def _streamed_mismatch(gold_distinct: int, rows_read: int) -> Verdict:
    """The verdict of a streamed prediction stopped at its first foreign row, one frozen
    instance per value (and so pickled once per batch of them)."""
    # streamed: the prediction's first foreign row stopped the read, its size is unknown
    return Verdict.fail(
        ErrorCode.WRONG_RESULT,
        f"different row sets: gold {gold_distinct} distinct rows, "
        f"prediction differs by row {rows_read}",
        VerdictDetail(Difference.WRONG_VALUES),
    )


def bird_verdict(
    gold: Result | EngineError, pred: Result | StreamedMatch | EngineError | None
) -> Verdict:
    """Score one executed pair; `pred` is None when no SQL was found in the prediction."""
    if isinstance(gold, EngineError):
        return Verdict.fail(ErrorCode.GOLD_ERROR, f"gold query failed: {gold}")
    if pred is None:
        return Verdict.statement_failed(ErrorCode.PARSE_ERROR, "no SQL found in the prediction")
    if isinstance(pred, EngineError):
        return Verdict.engine_error(pred)
    if isinstance(pred, StreamedMatch):
        if pred.matched:
            return Verdict.ok()
        return _streamed_mismatch(pred.gold_distinct, pred.rows_read)
    if bird_result_match(gold.rows, pred.rows):
        return Verdict.ok()
    gold_rows, pred_rows = hash_safe(gold.rows, pred.rows)
    gold_distinct, pred_distinct = len(set(gold_rows)), len(set(pred_rows))
    return Verdict.fail(
        ErrorCode.WRONG_RESULT,
        f"different row sets: gold {gold_distinct} distinct rows, prediction {pred_distinct}",
        VerdictDetail.of_shapes(
            _shape(pred.rows),
            [_shape(gold.rows)],
            _row_set_difference(gold_distinct, pred_distinct),
        ),
    )


def _shape(rows: Sequence[Row]) -> Shape:
    return Shape(len(rows), len(rows[0]) if rows else 0)


def _row_set_difference(gold_distinct: int, pred_distinct: int) -> Difference:
    """BIRD compares row sets: an empty one, one of another size, or the same size."""
    if pred_distinct == 0:
        return Difference.EMPTY_RESULT
    return Difference.WRONG_ROWS if pred_distinct != gold_distinct else Difference.WRONG_VALUES


def bird_metrics(
    gold: Result | EngineError | None, pred: Result | StreamedMatch | EngineError | None
) -> dict[str, float]:
    """The `error`, `trivial` and `gold_error` metrics; None stands for "did not run".

    `trivial` describes the answer, as the bird-sql environment does: it ran and its rows, as
    a set, are none or a single 0, 1 or NULL (`is_trivial_result`: an answer that may match
    by luck).
    """
    ran = isinstance(pred, Result | StreamedMatch)
    if isinstance(pred, StreamedMatch):
        trivial = pred.trivial
    else:
        trivial = isinstance(pred, Result) and is_trivial_result(pred.rows)
    return {
        "error": float(not ran),
        "trivial": float(trivial),
        "gold_error": float(isinstance(gold, EngineError)),
    }


def parse_bird_prediction(value: object) -> BirdPrediction:
    """Read one value of the predictions JSON; ValueError says why it is malformed.

    Accepted: the official "<SQL>\\t----- bird -----\\t<db_id>", a bare string (raw SQL or
    an answer with a fenced ```sql block), and the official placeholder 0 for "no prediction".
    """
    if isinstance(value, int) and not isinstance(value, bool) and value == 0:
        return BirdPrediction(sql=None)
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    if BIRD_SEPARATOR not in value:
        return BirdPrediction(sql=extract_sql(value))
    parts = value.split(BIRD_SEPARATOR)
    if len(parts) != 2:
        raise ValueError(f"{BIRD_SEPARATOR.strip()!r} separator appears {len(parts) - 1} times")
    sql_text, db_id = parts
    if not db_id.strip():
        raise ValueError("empty db_id after the separator")
    return BirdPrediction(sql=extract_sql(sql_text), db_id=db_id.strip())


def load_bird_questions(path: str | Path) -> list[BirdQuestion]:
    """The questions file (BIRD `dev.json` layout): a list of objects with db_id and SQL."""
    return _questions(_read_text(path, "questions"), path)


def _questions(text: str, path: str | Path) -> list[BirdQuestion]:
    data = _parsed(text, path, "questions")
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of questions, got {type(data).__name__}")
    questions = []
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            raise DataError(f"{path}: entry {index} is not an object")
        try:
            db_id, sql = item["db_id"], item["SQL"]
        except KeyError as missing:
            raise DataError(f"{path}: entry {index} has no {missing.args[0]!r} field") from None
        if not isinstance(db_id, str) or not isinstance(sql, str):
            raise DataError(f"{path}: entry {index}: db_id and SQL must be strings")
        if not plain_name(db_id):  # `<db-dir>/<db_id>/<db_id>.sqlite`, a URL's `{db_id}`
            raise DataError(f"{path}: entry {index}: db_id {db_id!r} is not a plain name")
        qid = item.get("question_id", index)
        difficulty = item.get("difficulty")
        questions.append(
            BirdQuestion(str(qid), db_id, sql, difficulty if isinstance(difficulty, str) else None)
        )
    return _number_repeats(questions)


def _number_repeats(questions: list[BirdQuestion]) -> list[BirdQuestion]:
    """Later copies of a question_id become `<id>#2`, `<id>#3`...: the official scripts score
    by position, so a repeat is a question of its own (the July 2024 official MySQL and
    PostgreSQL mini-dev files hold 137 and 138 twice, and count 500)."""
    seen: Counter[str] = Counter()
    numbered = []
    for q in questions:
        seen[q.question_id] += 1
        n = seen[q.question_id]
        numbered.append(q if n == 1 else replace(q, question_id=f"{q.question_id}#{n}"))
    return numbered


def predictions_by_question(
    predictions: dict[str, object], questions: Sequence[BirdQuestion]
) -> dict[str, object]:
    """The predictions keyed by question_id, whichever way the file keys them.

    The official scripts pair predictions with questions by position (they read the values
    in file order), and the official generators key them "0", "1", ... by position. On BIRD
    dev a question's id is its position, so the two agree; on mini-dev (ids 1471, 1472, ...)
    they do not. So keys that are exactly the positions 0..n-1, when those are not the
    question ids, are read as positions; any other keys as question ids (a repeated
    question's `<id>#2` then takes the entry of `<id>`).
    """
    positions = {str(i) for i in range(len(questions))}
    ids = {q.question_id for q in questions}
    if set(predictions) == positions and ids != positions:
        return {q.question_id: predictions[str(i)] for i, q in enumerate(questions)}
    repeats = {
        q.question_id: predictions[base]
        for q in questions
        if q.question_id not in predictions and (base := q.question_id.split("#")[0]) in predictions
    }
    return predictions | repeats


def load_bird_predictions(path: str | Path) -> dict[str, object]:
    """The official predictions JSON: an object mapping question_id (or position, see
    `predictions_by_question`) to a prediction string."""
    return _predictions(_read_text(path, PREDICTIONS), path)


def _predictions(text: str, path: str | Path) -> dict[str, object]:
    data = _parsed(text, path, "predictions")
    if not isinstance(data, dict):
        raise DataError(
            f"{path}: expected a JSON object {{question_id: prediction}}, got {type(data).__name__}"
        )
    return {str(key): value for key, value in data.items()}


def _read_text(path: str | Path, what: str) -> str:
    return whole_file_text(Path(path), what)  # not a FIFO or a device, bounded


def _parsed(text: str, path: str | Path, what: str) -> Any:
    try:
        return json_input.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"the {what} file {path} is not valid JSON: {exc}") from exc


def evaluate_bird(
    predictions: str | Path,
    *,
    questions: str | Path,
    db_dir: str | Path,
    metrics: Sequence[BirdMetric] = tuple(map(BirdMetric, BirdEvalOptions.metrics.split(","))),
    db_url: str | None = None,
    ves_repeats: int = BirdEvalOptions.ves_repeats,
    timeout: float | None = BirdEvalOptions.timeout,
    workers: int = BirdEvalOptions.workers,
    cache_dir: str | Path | None = None,
    clock: Callable[[], float] = time.perf_counter,
    on_result: OnResult | None = None,
    instance_ids: Collection[str] | None = None,
    _on_query: Callable[[], None] | None = None,
) -> list[InstanceResult]:
    """Score BIRD predictions in the official formats; one result per question, in file order.

    Databases are at `db_dir/<db_id>/<db_id>.sqlite`, or on a server when `db_url` is given
    (`mysql://…/{db_id}` for one database per db_id, or a URL without `{db_id}` holding every
    table, as BIRD's MySQL/PostgreSQL dumps do). A question with no prediction entry, an entry
    that is malformed or names another database, or a missing database scores 0 with a
    reason; only unreadable input files raise `DataError`. The gold runs even when the
    prediction cannot, so `trivial` and `gold_error` describe every question. Gold results of
    SQLite files go through the result cache (`cache_dir`, default `$QUERYBENCH_CACHE` or
    ~/.cache/querybench).

    `metrics` adds `soft_f1` and `r_ves` (see `metrics.py`) to each result's metrics; R-VES
    times every matched pair `ves_repeats` times on `clock`, so it is slow and its figures
    depend on the machine's load. `instance_ids` scores only those questions (a shard);
    `_on_query` is a progress tick after each query.
    """
    questions_text = _read_text(questions, "questions")
    try:
        predictions_text = _read_text(predictions, PREDICTIONS)
    except DataError:
        _questions(questions_text, questions)  # a malformed questions file is said first
        raise
    memo = None
    if db_url is None and BirdMetric.R_VES not in metrics:
        memo = bird_run_cache.run_key(
            questions_text,
            predictions_text,
            db_dir=db_dir,
            metrics=[str(m) for m in metrics],
            instance_ids=instance_ids,
            timeout=timeout,
        )
    cache = ResultCache(cache_dir)  # the run lookup, the outcomes and the run entry: one file
    try:
        if memo is not None and (known := bird_run_cache.lookup(memo, cache)) is not None:
            for result in known:
                if on_result is not None:
                    on_result(result)
            return known
        listed = _questions(questions_text, questions)
        predicted = predictions_by_question(_predictions(predictions_text, predictions), listed)
        if instance_ids is not None:
            wanted = set(instance_ids)
            listed = [q for q in listed if q.question_id in wanted]
        rejected: dict[str, Verdict] = {}
        gold_jobs: dict[str, tuple[str | Path, str]] = {}
        pred_jobs: dict[str, tuple[str | Path, str]] = {}
        # db_id -> (where, present): one stat each
        databases: dict[str, tuple[str | Path, bool]] = {}
        for q in listed:
            if q.db_id not in databases:
                where = bird_database(q.db_id, db_dir, db_url)
                databases[q.db_id] = (where, not isinstance(where, Path) or where.is_file())
            database, present = databases[q.db_id]
            if not present:
                rejected[q.question_id] = Verdict.fail(
                    ErrorCode.ENGINE_UNAVAILABLE, f"database not found: {database}"
                )
                continue
            gold_jobs[q.question_id] = (database, q.gold_sql)
            prediction = _read_prediction(q, predicted)
            if isinstance(prediction, Verdict):
                rejected[q.question_id] = prediction
            elif prediction.sql is not None:
                pred_jobs[q.question_id] = (database, prediction.sql)
        contents = None
        if memo is not None:  # before the run: its results are of this content
            files = [database for database, _ in databases.values()]
            contents = bird_run_cache.database_contents(files, cache)
        gold, pred = run_gold_and_predictions(
            gold_jobs,
            pred_jobs,
            timeout=timeout,
            workers=workers,
            cache=cache,
            on_query=_on_query,
        )
        verdicts = {
            q.question_id: rejected.get(q.question_id)
            or bird_verdict(_ran(gold.get(q.question_id)), pred.get(q.question_id))
            for q in listed
        }
        rewards: dict[str, float] = {}
        if BirdMetric.R_VES in metrics:
            matched = [
                TimedPair(
                    q.question_id,
                    pred_jobs[q.question_id][0],
                    pred_jobs[q.question_id][1],
                    q.gold_sql,
                )
                for q in listed
                if verdicts[q.question_id].score == 1.0
            ]
            rewards = measure_rewards(
                matched,
                repeats=ves_repeats,
                timeout=timeout,
                workers=workers,
                clock=clock,
                on_pair=_on_query,
            )
        engine = bird_dialect(db_url)
        results = []
        for q in listed:
            g, p = gold.get(q.question_id), pred.get(q.question_id)
            values = bird_metrics(g, p)
            if g is None:  # the database is missing: the gold could not run either
                values["gold_error"] = 1.0
                values["error"] = 0.0
            if BirdMetric.SOFT_F1 in metrics:
                values["soft_f1"] = (
                    soft_f1(p.rows, g.rows)
                    if isinstance(g, Result) and isinstance(p, Result)
                    else 0.0
                )
            if BirdMetric.R_VES in metrics:
                values["r_ves"] = r_ves_value(rewards.get(q.question_id, 0.0))
            results.append(_instance(q, verdicts[q.question_id], values, engine))
            if on_result is not None:
                on_result(results[-1])
        jobs = [*gold_jobs.values(), *pred_jobs.values()]
        outcomes = [*gold.values(), *pred.values()]
        if memo is not None and contents is not None and bird_run_cache.storable(jobs, outcomes):
            bird_run_cache.remember(memo, contents, results, cache)
        return results
    finally:
        cache.close()


def bird_database(db_id: str, db_dir: str | Path, db_url: str | None) -> str | Path:
    """Where a question's database is: the server URL (its `{db_id}` filled in) or the file."""
    if db_url is not None:
        return db_url.replace("{db_id}", db_id)
    return Path(db_dir) / db_id / f"{db_id}.sqlite"


# BIRD mini-dev's names for its dialects (its file names, `--dialect`), and the engine of each.
BIRD_DIALECTS: Mapping[str, EngineKind] = MappingProxyType(
    {"sqlite": EngineKind.SQLITE, "mysql": EngineKind.MYSQL, "postgresql": EngineKind.POSTGRES}
)


def bird_dialect(db_url: str | None) -> str:
    """BIRD's name for the dialect `db_url` speaks (the SQLite files without one); a URL no
    BIRD dialect matches keeps its scheme."""
    if db_url is None:
        return "sqlite"
    scheme = db_url.partition("://")[0].lower()
    spec = spec_for_scheme(scheme)
    kind = None if spec is None else spec.kind
    return next((name for name, k in BIRD_DIALECTS.items() if k == kind), scheme)


def _ran(outcome: Result | EngineError | None) -> Result | EngineError:
    return outcome if outcome is not None else EngineError("the gold query did not run")


def _read_prediction(q: BirdQuestion, predictions: dict[str, object]) -> BirdPrediction | Verdict:
    """The parsed prediction entry, or the failing verdict when there is no usable one."""
    if q.question_id not in predictions:
        return Verdict.fail(ErrorCode.MISSING_PREDICTION, "no entry in the predictions file")
    value = predictions[q.question_id]
    if value == 0 and not isinstance(value, bool):
        return Verdict.fail(
            ErrorCode.MISSING_PREDICTION, "the predictions file has the placeholder 0"
        )
    if isinstance(value, str) and (too_large := oversized_answer(value)) is not None:
        return Verdict.fail(ErrorCode.TOO_LARGE, too_large)
    try:
        prediction = parse_bird_prediction(value)
    except ValueError as exc:
        return Verdict.fail(ErrorCode.BAD_PREDICTION_FILE, f"malformed prediction entry: {exc}")
    if prediction.db_id is not None and prediction.db_id != q.db_id:
        reason = f"prediction names database {prediction.db_id!r}, the question is on {q.db_id!r}"
        return Verdict.fail(ErrorCode.BAD_PREDICTION_FILE, reason)
    return prediction


def _instance(
    q: BirdQuestion, verdict: Verdict, metrics: dict[str, float], engine: str = "sqlite"
) -> InstanceResult:
    return InstanceResult(
        instance_id=q.question_id,
        score=verdict.score,
        error=verdict.error,
        message=verdict.message,
        difficulty=q.difficulty,
        engine=engine,
        metrics=metrics,
        detail=verdict.detail,
    )
