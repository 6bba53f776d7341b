"""Spider 1.0 execution match, scored as the official test-suite evaluation scores it.

The reference is taoyds/test-suite-sql-eval (`evaluation.py` calling `exec_eval.eval_exec_match`)
with its defaults, plug_value and keep_distinct off:

* the prediction's " value " placeholders become " 1 ", and both queries get the same
  normalisation: "> =" style operators joined, every DISTINCT token dropped, and
  YEAR(CURDATE()) replaced by 2020;
* results are compared as bags of rows, with the columns of the prediction free to be permuted;
* row order counts only when the (normalised) gold text contains "order by";
* a prediction that fails to run scores 0; the gold must run (the official script asserts).

The matchers are pure functions over rows; `evaluate_spider1` runs the official file formats.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from querybench.engines.base import Result
from querybench.errors import EngineError
from querybench.evaluation.verdict import GOLD_ERROR, WRONG_RESULT, Verdict

Row = tuple[Any, ...]

# The tokens of sqlparse's lexer that can contain the letters "distinct" without being the
# DISTINCT keyword itself (comments, strings, quoted names, sigil names), and plain words.
# Only a whole word equal to "distinct" is dropped, the way the official `remove_distinct`
# drops each flattened sqlparse token whose value is "distinct".
_TOKEN = re.compile(
    r"""
      (?P<comment>(?:--|\#\ )[^\r\n]*|/\*.*?\*/)
    | (?P<string>'(?:''|\\'|[^'])*'|"(?:""|\\"|[^"])*"|`(?:``|[^`])*`)
    | (?P<bracketed>(?<![\w\])])\[[^\]\[]+\])
    | (?P<cast>::)
    | (?P<sigil>(?<!\w)(?:\#\#|[@$:?\#])\w+)
    | (?P<word>\w[$\#\w]*)
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


def remove_distinct(sql: str) -> str:
    """`sql` with every DISTINCT keyword token removed (whitespace around it is kept)."""
    out = []
    last = 0
    for match in _TOKEN.finditer(sql):
        if match.lastgroup == "word" and match.group().lower() == "distinct":
            out.append(sql[last : match.start()])
            last = match.end()
    out.append(sql[last:])
    return "".join(out)


def join_split_operators(sql: str) -> str:
    """Mend "> =", "< =" and "! =", which some models emit (official `postprocess`)."""
    return sql.replace("> =", ">=").replace("< =", "<=").replace("! =", "!=")


def replace_cur_year(sql: str) -> str:
    """YEAR(CURDATE()) is MySQL; the official runner pins it to 2020 before executing."""
    return _CUR_YEAR.sub("2020", sql)


def prepare_spider1(gold_sql: str, pred_sql: str, *, keep_distinct: bool = False) -> Spider1Queries:
    """Normalise a gold/prediction pair exactly as the official evaluation does before running."""
    pred = join_split_operators(pred_sql.replace(" value ", " 1 "))
    gold = join_split_operators(gold_sql)
    if not keep_distinct:
        pred, gold = remove_distinct(pred), remove_distinct(gold)
    order_matters = "order by" in gold.lower()
    return Spider1Queries(replace_cur_year(gold), replace_cur_year(pred), order_matters)


def spider1_result_match(
    gold_rows: Sequence[Row], pred_rows: Sequence[Row], order_matters: bool
) -> bool:
    """Whether the prediction's rows denote the gold's, under the official `result_eq` rules.

    Same number of rows and columns; some permutation of the prediction's columns makes its rows
    equal to the gold's, as a sequence when `order_matters` and as a bag otherwise.
    """
    if not gold_rows and not pred_rows:
        return True
    if len(gold_rows) != len(pred_rows):
        return False
    if len(pred_rows[0]) != len(gold_rows[0]):
        return False
    if not _same_unordered_rows(gold_rows, pred_rows, order_matters):
        return False
    return _column_permutation_exists(gold_rows, pred_rows, order_matters)


def spider1_verdict(
    gold: Result | EngineError, pred: Result | EngineError, *, order_matters: bool
) -> Verdict:
    """Score one executed pair: the gold must have run, the prediction must run and match."""
    if isinstance(gold, EngineError):
        return Verdict.fail(GOLD_ERROR, f"gold query failed: {gold}")
    if isinstance(pred, EngineError):
        return Verdict.fail(pred.code, str(pred))
    if spider1_result_match(gold.rows, pred.rows, order_matters):
        return Verdict.ok()
    return Verdict.fail(WRONG_RESULT, _difference(gold.rows, pred.rows, order_matters))


def _difference(gold: Sequence[Row], pred: Sequence[Row], order_matters: bool) -> str:
    def shape(rows: Sequence[Row]) -> str:
        return f"{len(rows)} rows x {len(rows[0]) if rows else 0} columns"

    if len(gold) != len(pred) or (gold and len(gold[0]) != len(pred[0])):
        return f"result shape differs: gold {shape(gold)}, prediction {shape(pred)}"
    if order_matters and _same_unordered_rows(gold, pred, order_matters=False):
        return "same rows in a different order (the gold has ORDER BY)"
    return f"different values ({shape(gold)})"


def _cell_key(value: Any) -> str:
    return str(value) + str(type(value))


def _same_unordered_rows(gold: Sequence[Row], pred: Sequence[Row], order_matters: bool) -> bool:
    # The official quick rejection: sort each row's cells by their text and type name, then
    # compare the rows as a sequence (order matters) or as a *set*. It is a necessary condition
    # in practice, and it is part of the contract even where it is not (1 vs 1.0 sort apart).
    g = [tuple(sorted(row, key=_cell_key)) for row in gold]
    p = [tuple(sorted(row, key=_cell_key)) for row in pred]
    return g == p if order_matters else set(g) == set(p)


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
