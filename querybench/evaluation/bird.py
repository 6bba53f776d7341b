"""BIRD execution match, scored as the official BIRD evaluation scores it.

The official rule (`evaluation.py` of the BIRD release) is `set(pred_rows) == set(gold_rows)`:
row order and duplicate rows are ignored, column order and the driver's exact values are kept.
A prediction that errors or times out scores 0.

Each instance also carries three 0/1 metrics:

* `error`: no SQL could be taken from the prediction, or it failed, or it timed out;
* `trivial`: the gold result is empty or a single cell holding 0, 1 or NULL, an answer a wrong
  query can hit by accident, so a match on it says little;
* `gold_error`: the gold query itself failed; the instance then scores 0.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from querybench.engines.base import Result
from querybench.errors import DataError, EngineError
from querybench.evaluation.execution import run_gold_and_predictions
from querybench.evaluation.prediction_file import ReadLimits, read_prediction_text
from querybench.evaluation.record import InstanceResult
from querybench.evaluation.sql_extract import extract_sql
from querybench.evaluation.verdict import (
    BAD_PREDICTION_FILE,
    ENGINE_UNAVAILABLE,
    GOLD_ERROR,
    MISSING_PREDICTION,
    PARSE_ERROR,
    WRONG_RESULT,
    Verdict,
)

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
    return set(pred_rows) == set(gold_rows)


def is_trivial_result(rows: Sequence[Row]) -> bool:
    """No rows, or exactly one row of one cell that is 0, 1 or NULL."""
    if not rows:
        return True
    if len(rows) != 1 or len(rows[0]) != 1:
        return False
    cell = rows[0][0]
    return cell is None or (isinstance(cell, int | float) and cell in _TRIVIAL_CELLS)


@dataclass(frozen=True)
class StreamedMatch:
    """What comparing a prediction's rows batch by batch against the gold set found.

    `rows_read` counts the rows looked at: the comparison stops at the first row that is not a
    gold row, so a huge wrong result is never read to its end.
    """

    matched: bool
    trivial: bool
    rows_read: int


def bird_stream_match(gold_rows: Sequence[Row], batches: Iterable[Sequence[Row]]) -> StreamedMatch:
    """`bird_result_match` on a prediction read in batches, holding one batch at a time.

    The same set rule: every row must be a gold row (else stop, no match) and every gold row
    must have been seen by the end. `trivial` is `is_trivial_result` of the prediction, decided
    from its first two rows (one more batch is asked for when a mismatch stops before then).
    """
    gold = set(gold_rows)
    seen: set[Row] = set()
    first: list[Row] = []  # the first two rows, enough to tell a trivial result
    read = 0
    iterator = iter(batches)
    for batch in iterator:
        if len(first) < 2:
            first.extend(batch[: 2 - len(first)])
        for row in batch:
            read += 1
            if row not in gold:
                if len(first) < 2:
                    first.extend(next(iterator, [])[:1])
                return StreamedMatch(False, is_trivial_result(first), read)
            seen.add(row)
    return StreamedMatch(len(seen) == len(gold), is_trivial_result(first), read)


def bird_verdict(
    gold: Result | EngineError, pred: Result | StreamedMatch | EngineError | None
) -> Verdict:
    """Score one executed pair; `pred` is None when no SQL was found in the prediction."""
    if isinstance(gold, EngineError):
        return Verdict.fail(GOLD_ERROR, f"gold query failed: {gold}")
    if pred is None:
        return Verdict.fail(PARSE_ERROR, "no SQL found in the prediction")
    if isinstance(pred, EngineError):
        return Verdict.fail(pred.code, str(pred))
    if isinstance(pred, StreamedMatch):
        if pred.matched:
            return Verdict.ok()
        return Verdict.fail(
            WRONG_RESULT,
            f"different row sets: gold {len(set(gold.rows))} distinct rows, "
            f"prediction differs by row {pred.rows_read}",
        )
    if bird_result_match(gold.rows, pred.rows):
        return Verdict.ok()
    return Verdict.fail(
        WRONG_RESULT,
        f"different row sets: gold {len(set(gold.rows))} distinct rows, "
        f"prediction {len(set(pred.rows))}",
    )


def bird_metrics(
    gold: Result | EngineError | None, pred: Result | StreamedMatch | EngineError | None
) -> dict[str, float]:
    """The `error`, `trivial` and `gold_error` metrics; None stands for "did not run".

    `trivial` describes the answer, as the bird-sql environment does: it ran and returned no
    rows or a single 0, 1 or NULL (an answer that may match by luck).
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
    data = _read_json(path, "questions")
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
        qid = item.get("question_id", index)
        difficulty = item.get("difficulty")
        questions.append(
            BirdQuestion(str(qid), db_id, sql, difficulty if isinstance(difficulty, str) else None)
        )
    ids = [q.question_id for q in questions]
    if len(set(ids)) != len(ids):
        raise DataError(f"{path}: question_id values are not unique")
    return questions


def load_bird_predictions(path: str | Path) -> dict[str, object]:
    """The official predictions JSON: an object mapping question_id to a prediction string."""
    data = _read_json(path, "predictions")
    if not isinstance(data, dict):
        raise DataError(
            f"{path}: expected a JSON object {{question_id: prediction}}, got {type(data).__name__}"
        )
    return {str(key): value for key, value in data.items()}


def _read_json(path: str | Path, what: str) -> Any:
    try:  # not a FIFO or a device, bounded in time and size
        text = read_prediction_text(Path(path), None, ReadLimits())
    except DataError as exc:
        raise DataError(f"cannot read the {what} file {path}: {exc}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"the {what} file {path} is not valid JSON: {exc}") from exc


def evaluate_bird(
    questions_json: str | Path,
    predictions_json: str | Path,
    db_dir: str | Path,
    *,
    timeout: float | None = 30.0,
    workers: int = 4,
    cache_dir: str | Path | None = None,
    on_query: Callable[[], None] | None = None,
) -> list[InstanceResult]:
    """Score BIRD predictions in the official formats; one result per question, in file order.

    Databases are at `db_dir/<db_id>/<db_id>.sqlite`. A question with no prediction entry, an
    entry that is malformed or names another database, or a missing database scores 0 with a
    reason; only unreadable input files raise `DataError`. The gold runs even when the
    prediction cannot, so `trivial` and `gold_error` describe every question. Gold results go
    through the result cache (`cache_dir`, default `$QUERYBENCH_CACHE` or ~/.cache/querybench).
    """
    questions = load_bird_questions(questions_json)
    predictions = load_bird_predictions(predictions_json)
    rejected: dict[str, Verdict] = {}
    gold_jobs: dict[str, tuple[Path, str]] = {}
    pred_jobs: dict[str, tuple[Path, str]] = {}
    for q in questions:
        database = Path(db_dir) / q.db_id / f"{q.db_id}.sqlite"
        if not database.is_file():
            rejected[q.question_id] = Verdict.fail(
                ENGINE_UNAVAILABLE, f"database not found: {database}"
            )
            continue
        gold_jobs[q.question_id] = (database, q.gold_sql)
        prediction = _read_prediction(q, predictions)
        if isinstance(prediction, Verdict):
            rejected[q.question_id] = prediction
        elif prediction.sql is not None:
            pred_jobs[q.question_id] = (database, prediction.sql)
    gold, pred = run_gold_and_predictions(
        gold_jobs,
        pred_jobs,
        timeout=timeout,
        workers=workers,
        cache_dir=cache_dir,
        on_query=on_query,
    )
    results = []
    for q in questions:
        g, p = gold.get(q.question_id), pred.get(q.question_id)
        verdict = rejected.get(q.question_id) or bird_verdict(_ran(g), p)
        metrics = bird_metrics(g, p)
        if g is None:  # the database is missing: the gold could not run either
            metrics["gold_error"] = 1.0
            metrics["error"] = 0.0
        results.append(_instance(q, verdict, metrics))
    return results


def _ran(outcome: Result | EngineError | None) -> Result | EngineError:
    return outcome if outcome is not None else EngineError("the gold query did not run")


def _read_prediction(q: BirdQuestion, predictions: dict[str, object]) -> BirdPrediction | Verdict:
    """The parsed prediction entry, or the failing verdict when there is no usable one."""
    if q.question_id not in predictions:
        return Verdict.fail(MISSING_PREDICTION, "no entry in the predictions file")
    value = predictions[q.question_id]
    if value == 0 and not isinstance(value, bool):
        return Verdict.fail(MISSING_PREDICTION, "the predictions file has the placeholder 0")
    try:
        prediction = parse_bird_prediction(value)
    except ValueError as exc:
        return Verdict.fail(BAD_PREDICTION_FILE, f"malformed prediction entry: {exc}")
    if prediction.db_id is not None and prediction.db_id != q.db_id:
        reason = f"prediction names database {prediction.db_id!r}, the question is on {q.db_id!r}"
        return Verdict.fail(BAD_PREDICTION_FILE, reason)
    return prediction


def _instance(q: BirdQuestion, verdict: Verdict, metrics: dict[str, float]) -> InstanceResult:
    return InstanceResult(
        instance_id=q.question_id,
        score=verdict.score,
        error=verdict.error,
        message=verdict.message,
        difficulty=q.difficulty,
        engine="sqlite",
        metrics=metrics,
    )
