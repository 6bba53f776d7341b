"""Spider 2.0 agentic / DBT scoring: one official eval-config entry to one `Verdict`.

An entry of `spider2_eval.jsonl` reads `{"func": "duckdb_match", "parameters": {"gold":
"playbook.duckdb", "condition_tabs": [...], ...}}`; the `evaluation` field of a line holds one
entry or a list of them. `score_agentic` runs the official matcher of that name (or its strict
counterpart) on a prediction: the answer text for `string_match` / `number_match`, a CSV path for
`table_match`, a list of CSV paths for `tables_match`, a DuckDB path for `duckdb_match`.

How the official driver combines several entries of one instance is the caller's business:
for a text answer it keeps the best of its `string_match` / `number_match` entries, for a file
answer the verdict of the last `table_match` / `duckdb_match` entry.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from querybench.errors import DataError, ErrorCode
from querybench.evaluation.database_answer import DatabaseReader
from querybench.evaluation.spider2.agentic.compare import AGENTIC_TOLERANCE, OFFICIAL_TOLERANCE
from querybench.evaluation.spider2.agentic.tables import (
    duckdb_match,
    strict_duckdb_match,
    strict_table_match,
    strict_tables_match,
    table_match,
    tables_match,
)
from querybench.evaluation.spider2.agentic.text import (
    number_match,
    strict_number_match,
    strict_string_match,
    string_match,
)
from querybench.evaluation.verdict import Verdict
from querybench.tasks.agentic_checks import AgenticCheck, parse_checks

__all__ = [
    "AGENTIC_TOLERANCE",
    "OFFICIAL_TOLERANCE",
    "AgenticCheck",
    "check_parameters",
    "duckdb_match",
    "number_match",
    "parse_evaluation",
    "score_agentic",
    "strict_duckdb_match",
    "strict_number_match",
    "strict_string_match",
    "strict_table_match",
    "strict_tables_match",
    "string_match",
    "table_match",
    "tables_match",
]

Prediction = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None


@dataclass(frozen=True)
class _Matcher:
    official: Callable[..., Verdict]
    strict: Callable[..., Verdict]
    answer: str  # "text", "file" or "files": what the prediction must be
    tolerant: bool  # takes the keyword-only `tolerance`
    reads_databases: bool = False  # takes the keyword-only `reader`


MATCHERS: Mapping[str, _Matcher] = {
    "string_match": _Matcher(string_match, strict_string_match, "text", False),
    "number_match": _Matcher(number_match, strict_number_match, "text", False),
    "table_match": _Matcher(table_match, strict_table_match, "file", True),
    "tables_match": _Matcher(tables_match, strict_tables_match, "files", True),
    "duckdb_match": _Matcher(duckdb_match, strict_duckdb_match, "file", True, True),
}


def parse_evaluation(evaluation: object, *, check: bool = True) -> tuple[AgenticCheck, ...]:
    """The `evaluation` field of one config line (an entry or a list of entries), checked
    (with `check=False` only its shape: a func name and a parameters object)."""
    checks = parse_checks(evaluation)
    if check:
        for entry in checks:
            check_parameters(entry.func, entry.parameters)
    return checks


def _signature(func_name: str) -> inspect.Signature:
    matcher = MATCHERS.get(func_name)
    if matcher is None:
        raise DataError(f"unknown Spider 2.0 eval function {func_name!r}")
    return inspect.signature(matcher.official)


def check_parameters(func_name: str, gold_params: Mapping[str, Any]) -> None:
    """Raise `DataError` unless `func_name` is known and takes exactly these parameters."""
    signature = _signature(func_name)
    try:
        # The official driver calls `func(prediction, **parameters)`.
        signature.bind(None, **gold_params)
    except TypeError as exc:
        raise DataError(f"{func_name} parameters {sorted(gold_params)}: {exc}") from None
    own = [n for n, p in signature.parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    for name in own:  # the scorer's own keywords (tolerance, reader), never a config's
        if name in gold_params:
            raise DataError(f"{func_name} takes no {name!r} parameter in a config")


def _resolve(gold: Any, gold_dir: Path) -> Any:
    if isinstance(gold, str):
        return gold_dir / gold
    if isinstance(gold, list):
        return [gold_dir / item if isinstance(item, str) else item for item in gold]
    return gold


def _prediction_problem(answer: str, prediction: Prediction) -> Verdict | None:
    if prediction is None:
        return Verdict.fail(ErrorCode.MISSING_PREDICTION, "no prediction")
    if answer == "text":
        fits = isinstance(prediction, str)
    elif answer == "file":
        fits = isinstance(prediction, str | os.PathLike)
    else:
        fits = isinstance(prediction, list | tuple) and all(
            isinstance(path, str | os.PathLike) for path in prediction
        )
    return (
        None if fits else Verdict.fail(ErrorCode.BAD_PREDICTION_FILE, f"expected a {answer} answer")
    )


def score_agentic(
    func_name: str,
    prediction: Prediction,
    gold_params: Mapping[str, Any],
    *,
    strict: bool,
    gold_dir: str | os.PathLike[str] | None = None,
    tolerance: float = OFFICIAL_TOLERANCE,
    reader: DatabaseReader | None = None,
) -> Verdict:
    """Score one prediction with the official (or strict) matcher named by a config entry.

    `gold_params` is the entry's `parameters`; when `gold_dir` is given, file names in its
    `gold` (table, tables and DuckDB matchers) are taken relative to it, as the official driver
    does with `gold/<instance_id>/`. `tolerance` is the table cell tolerance: 1e-2 in the DBT
    suite (the default), `AGENTIC_TOLERANCE` (1e-3) in the older agentic suite. `reader`
    reads DuckDB answers and golds in its killable children (None: a reader for this call).
    """
    try:
        check_parameters(func_name, gold_params)
    except DataError as exc:
        return Verdict.fail(ErrorCode.GOLD_ERROR, str(exc))
    matcher = MATCHERS[func_name]
    problem = _prediction_problem(matcher.answer, prediction)
    if problem is not None:
        return problem
    params = dict(gold_params)
    if gold_dir is not None and matcher.answer != "text" and "gold" in params:
        params["gold"] = _resolve(params["gold"], Path(gold_dir))
    extra: dict[str, Any] = {"tolerance": tolerance} if matcher.tolerant else {}
    if matcher.reads_databases:
        extra["reader"] = reader
    function = matcher.strict if strict else matcher.official
    try:
        return function(prediction, **params, **extra)
    except Exception as exc:  # a matcher bug must not stop a whole evaluation run
        return Verdict.fail(ErrorCode.SCORER_ERROR, f"{func_name}: {type(exc).__name__}: {exc}")
