"""Spider 2.0 agentic answers given as text: `string_match` and `number_match`.

`string_match` and `number_match` reproduce the official Spider 2.0 agentic / DBT `eval_utils`
verdict for verdict; `strict_string_match` and `strict_number_match` take the same inputs and fix
the flaws listed in their docstrings. Every function returns a `Verdict`: score 1, or score 0 with
`wrong_result` and a short reason, or `gold_error` when the gold parameters cannot be used (the
official code raises there, which its driver turns into a crash or a 0).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from querybench.errors import ErrorCode, GoldParametersError
from querybench.evaluation.spider2.agentic.compare import has_injective_assignment
from querybench.evaluation.verdict import Verdict

# The official extraction pattern, kept as written: an integer part (with optional thousands
# groups) bounded by `\b`, then an unbounded decimal part and an optional percent sign.
_OFFICIAL_NUMBER = re.compile(r"\b\d{1,3}(?:,\d{3})*\b(?:\.\d+)?%?|\b\d+\b(?:\.\d+)?%?")

# The strict pattern: an optional sign, thousands groups, a decimal part, a leading-dot decimal,
# an exponent and a percent sign; never starting inside a word or after a decimal point, and never
# running into a following word character or further decimal part ("3.14.15", "5km" are no numbers).
_STRICT_NUMBER = re.compile(
    r"(?<![\w.])(?P<sign>[-\u2212])?"
    r"(?P<body>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)"
    r"(?P<exp>[eE][-+]?\d+)?(?P<pct>%)?"
    r"(?!\w|\.\d)"
)

_CONJUNCTIONS = ("or", "and")


def _check_conj(conj: object) -> str:
    if conj not in _CONJUNCTIONS:
        raise GoldParametersError(f"conj must be 'and' or 'or', not {conj!r}")
    return str(conj)


def _gold_error(exc: GoldParametersError) -> Verdict:
    return Verdict.fail(ErrorCode.GOLD_ERROR, str(exc))


# --------------------------------------------------------------------------- string_match


def _official_strings(gold: object) -> list[str]:
    items = list(gold) if isinstance(gold, list | tuple) else [gold]
    if not all(isinstance(item, str) for item in items):
        # The official `sub.lower()` raises on a non-string.
        raise GoldParametersError(f"string_match gold must be strings, got {gold!r}")
    return [str(item) for item in items]


def string_match(pred: str, gold: object, conj: str = "or", exclude: Sequence[str] = ()) -> Verdict:
    """Official `string_match`: lower-cased substring containment.

    `gold` is a string or a list of strings; `conj="or"` needs any of them inside `pred`,
    `conj="and"` all of them. Any `exclude` string inside `pred` fails first. Normalisation is
    `str.lower()` on both sides and nothing else (no whitespace or punctuation folding).
    """
    try:
        golds = _official_strings(gold)
        # A bare string is iterated character by character, as the official loop does.
        excludes = _official_strings(list(exclude))
    except GoldParametersError as exc:
        return _gold_error(exc)
    text = pred.lower()
    for item in excludes:
        if item.lower() in text:
            return Verdict.fail(ErrorCode.WRONG_RESULT, f"excluded text {item!r} found")
    try:
        conj = _check_conj(conj)  # officially checked only once no excluded text was found
    except GoldParametersError as exc:
        return _gold_error(exc)
    found = [item.lower() in text for item in golds]
    if conj == "or" and not any(found):
        return Verdict.fail(ErrorCode.WRONG_RESULT, f"none of {len(golds)} gold string(s) found")
    if conj == "and" and not all(found):
        missing = golds[found.index(False)]
        return Verdict.fail(ErrorCode.WRONG_RESULT, f"gold string {missing!r} not found")
    return Verdict.ok()


def _strict_pattern(item: str) -> re.Pattern[str]:
    words = item.casefold().split()
    if not words:
        raise GoldParametersError("empty string in string_match gold or exclude")
    body = r"\s+".join(re.escape(word) for word in words)
    head = r"(?<!\w)" if re.match(r"\w", words[0]) else ""
    tail = r"(?!\w)" if re.search(r"\w$", words[-1]) else ""
    return re.compile(head + body + tail)


def _shape(text: str) -> str:
    """A value's shape: each digit `9`, each capital `A`, each other letter `a`, the rest as
    written ("G06F" is "A99A", "357" is "999")."""
    return "".join(
        "9" if c.isdigit() else ("A" if c.isupper() else "a") if c.isalpha() else c for c in text
    )


def _distinctive(shape: str) -> bool:
    """A shape that prose rarely takes by chance: one holding a digit or two capitals (a
    number, an id, a code such as "G06F" or "MO"). A word's shape ("Aaaaaaa") is shared by
    the words around it, so a word gold has no hedge check (see `strict_string_match`)."""
    return "9" in shape or shape.count("A") >= 2


def _shaped_values(text: str, shape: str) -> set[str]:
    """The case-folded values in `text` of the given shape, as whole tokens."""
    body = "".join(r"\d" if c == "9" else r"[^\W\d_]" if c in "Aa" else re.escape(c) for c in shape)
    head = r"(?<![\w.,])" if re.match(r"[9Aa]", shape) else ""
    tail = r"(?![\w]|[.,]\d)" if re.search(r"[9Aa]$", shape) else ""
    return {m.casefold() for m in re.findall(head + body + tail, text) if _shape(m) == shape}


def _hedged_values(pred: str, golds: Sequence[str]) -> list[str]:
    """Values the answer states beside the gold's, of a gold's own distinctive shape: an
    answer listing every candidate ("1, 2, ..., 1000" for "357", forty IPC codes for
    "G06F") states more than one value."""
    wanted = {item.casefold() for item in golds}
    shapes = {s for s in (_shape(item.strip()) for item in golds) if _distinctive(s)}
    found = set().union(*(_shaped_values(pred, s) for s in shapes)) if shapes else set()
    return sorted(found - wanted)


def strict_string_match(
    pred: str, gold: object, conj: str = "or", exclude: Sequence[str] = ()
) -> Verdict:
    """`string_match` with whole-token matching, where an answer states one value; same
    inputs.

    Official flaws fixed here:

    * substring matching inside longer tokens: gold "357" is found in "1357", "MO" in "more",
      and exclude "May" rejects any answer saying "maybe", "Ca" any answer saying "because".
      Strict matches only where the gold's word characters are not glued to further word
      characters (case-folded, so "STRASSE" also meets "straße");
    * whitespace is compared literally, so an answer wrapped over two lines misses
      "Google Sunglasses". Strict lets any whitespace run match any whitespace run;
    * an empty gold list passes every answer under `conj="and"` (vacuous `all`), and an empty
      string in `gold` or `exclude` matches every answer. Strict reports these as `gold_error`;
    * a bare string given as `exclude` is taken character by character; strict takes it as one
      excluded string;
    * an answer that lists every candidate contains the gold, so it passes: "357" is found in
      "1, 2, ..., 1000", "G06F" among forty IPC codes. Strict reads the values of the gold's
      own shape in the answer (a number's digits, a code's capitals and digits: `_shape`) and
      fails an answer stating any such value that is no gold value, as `strict_number_match`
      fails an answer with more than one number. A word gold ("Bentley") is not checked so:
      its shape is common in prose, and a hedge of names goes undetected (known, kept).
    """
    try:
        golds = _official_strings(gold)
        conj = _check_conj(conj)
        excludes = _official_strings([exclude] if isinstance(exclude, str) else list(exclude))
        if not golds:
            raise GoldParametersError("string_match gold is empty")
        gold_patterns = [_strict_pattern(item) for item in golds]
        exclude_patterns = [_strict_pattern(item) for item in excludes]
    except GoldParametersError as exc:
        return _gold_error(exc)
    text = pred.casefold()
    for item, pattern in zip(excludes, exclude_patterns, strict=True):
        if pattern.search(text):
            return Verdict.fail(ErrorCode.WRONG_RESULT, f"excluded text {item!r} found")
    found = [pattern.search(text) is not None for pattern in gold_patterns]
    if conj == "or" and not any(found):
        return Verdict.fail(ErrorCode.WRONG_RESULT, f"none of {len(golds)} gold string(s) found")
    if conj == "and" and not all(found):
        missing = golds[found.index(False)]
        return Verdict.fail(ErrorCode.WRONG_RESULT, f"gold string {missing!r} not found")
    hedged = _hedged_values(pred, golds)
    if hedged:
        return Verdict.fail(
            ErrorCode.WRONG_RESULT,
            f"the answer states {len(hedged)} other value(s) of the gold's kind "
            f"(e.g. {hedged[0]!r}): a strict answer states one value",
        )
    return Verdict.ok()


# --------------------------------------------------------------------------- number_match


def official_numbers(text: str) -> list[str]:
    """The number tokens the official `number_match` reads from an answer, as written."""
    return _OFFICIAL_NUMBER.findall(text)


def _official_float(value: object) -> float:
    """Official conversion: drop commas; a `%` anywhere divides by 100."""
    text = str(value).replace(",", "")
    if "%" in text:
        return float(text.replace("%", "")) / 100
    return float(text)


def _gold_list(gold: object) -> list[object]:
    return list(gold) if isinstance(gold, list | tuple) else [gold]


def _gold_floats(golds: Sequence[object]) -> list[float]:
    try:
        return [_official_float(item) for item in golds]
    except ValueError as exc:
        raise GoldParametersError(f"number_match gold is not numeric: {exc}") from None


def _check_precision(precision: object) -> float:
    if isinstance(precision, bool) or not isinstance(precision, int | float):
        raise GoldParametersError(f"precision must be a number, not {precision!r}")
    return float(10 ** (-precision))


def number_match(
    pred: str,
    gold: object,
    percentage: bool = False,
    precision: int = 4,
    conj: str = "or",
) -> Verdict:
    """Official `number_match`: numbers read from the answer against gold numbers.

    Numbers are read with the official pattern (see `official_numbers`); commas are dropped and
    a trailing `%` divides by 100. When `gold` is a string, a float or a one-element list, the
    answer must contain exactly one number. A gold value matches when some answer number lies
    within `10 ** -precision` of it; with `percentage` each gold value `x` is replaced by the
    pair `x, 100 * x`. `conj` combines the gold values (`or`: any, `and`: all).
    """
    # The official order of failures: the one-number rule returns 0 before the gold, the
    # precision (only used when there is a number to compare) or `conj` is looked at.
    tokens = official_numbers(pred)
    single = isinstance(gold, str | float) or (isinstance(gold, list | tuple) and len(gold) == 1)
    if single and len(tokens) != 1:
        return Verdict.fail(
            ErrorCode.WRONG_RESULT, f"expected exactly one number, found {len(tokens)}"
        )
    try:
        values = [_official_float(token) for token in tokens]
        golds = _gold_floats(_gold_list(gold))
        if percentage:
            golds = [form for value in golds for form in (value, value * 100)]
        tolerance = _official_precision(precision) if values and golds else 0.0
        conj = _check_conj(conj)
    except GoldParametersError as exc:
        return _gold_error(exc)
    hits = [any(abs(value - target) <= tolerance for value in values) for target in golds]
    return _combine(hits, golds, conj)


def _official_precision(precision: object) -> float:
    """`10 ** -precision` as the official computes it (a bool is an int there)."""
    try:
        return 10 ** (-precision)  # type: ignore[operator,no-any-return]
    except TypeError:
        raise GoldParametersError(f"precision must be a number, not {precision!r}") from None


def _combine(hits: list[bool], golds: Sequence[float], conj: str) -> Verdict:
    if conj == "and" and not all(hits):
        return Verdict.fail(
            ErrorCode.WRONG_RESULT, f"no number matches gold {golds[hits.index(False)]!r}"
        )
    if conj == "or" and not any(hits):
        return Verdict.fail(
            ErrorCode.WRONG_RESULT, f"no number matches any of {len(golds)} gold value(s)"
        )
    return Verdict.ok()


@dataclass(frozen=True)
class AnswerNumber:
    """A number read from an answer by the strict reader."""

    value: float
    percent: bool

    def readings(self) -> tuple[float, ...]:
        # "12%" is 0.12 as a ratio, but also 12 when the gold is written in percent units.
        return (self.value / 100, self.value) if self.percent else (self.value,)


def strict_numbers(text: str) -> list[AnswerNumber]:
    """Numbers in an answer, with signs, exponents and leading-dot decimals."""
    numbers = []
    for match in _STRICT_NUMBER.finditer(text):
        literal = match["body"].replace(",", "") + (match["exp"] or "")
        value = float(literal)
        numbers.append(AnswerNumber(-value if match["sign"] else value, match["pct"] is not None))
    return numbers


def strict_number_match(
    pred: str,
    gold: object,
    percentage: bool = False,
    precision: int = 4,
    conj: str = "or",
) -> Verdict:
    """`number_match` without its flaws; same inputs.

    Official flaws fixed here:

    * an integer gold (`"gold": 1106`) escapes the exactly-one-number rule, which only looks for
      strings, floats and one-element lists, so an answer listing many numbers passes. Strict
      applies the rule to every single gold value;
    * signs are never read: "-5" counts as 5, so a negative gold can never match and a positive
      gold accepts its negation. Strict reads a leading minus;
    * "1.5e10" is read as 1.5 and ".5" as 5; "5.5km" is a number but "5km" is not. Strict reads
      exponents and leading-dot decimals, and no number glued to letters;
    * `percentage` with `conj="and"` demands both `x` and `100 * x` in the answer (impossible
      with a single gold, whose rule allows one number). Strict accepts either form per value;
    * `percentage` only scales the gold up, so a gold written in percent units (10.79) rejects
      "10.79%" (read as 0.1079). Strict also reads a percent-signed number at face value;
    * under `conj="and"` one answer number can satisfy several gold values, and an empty gold
      list passes everything. Strict pairs gold values with distinct answer numbers and reports
      an empty gold as `gold_error`;
    * `abs(a - b) <= 10 ** -precision` misses values exactly `10 ** -precision` apart through
      binary rounding; strict allows a relative slack of 1e-9 on the tolerance.

    Known and kept: commas always group thousands ("10,20,300" reads 10 and 20300), and a
    multi-value gold under `conj="or"` puts no limit on how many numbers the answer lists.
    """
    try:
        conj = _check_conj(conj)
        tolerance = _check_precision(precision) * (1 + 1e-9)
        golds = _gold_floats(_gold_list(gold))
        if not golds:
            raise GoldParametersError("number_match gold is empty")
    except GoldParametersError as exc:
        return _gold_error(exc)
    numbers = strict_numbers(pred)
    if len(golds) == 1 and len(numbers) != 1:
        return Verdict.fail(
            ErrorCode.WRONG_RESULT, f"expected exactly one number, found {len(numbers)}"
        )
    forms = [(value, value * 100) if percentage else (value,) for value in golds]

    def close(number: AnswerNumber, targets: tuple[float, ...]) -> bool:
        return any(
            math.isfinite(r) and abs(r - t) <= tolerance for r in number.readings() for t in targets
        )

    candidates = [[j for j, n in enumerate(numbers) if close(n, f)] for f in forms]
    if conj == "or":
        return _combine([bool(c) for c in candidates], golds, conj)
    if not all(candidates):
        return _combine([bool(c) for c in candidates], golds, conj)
    if not has_injective_assignment(candidates):
        return Verdict.fail(
            ErrorCode.WRONG_RESULT, "gold values need more distinct numbers than given"
        )
    return Verdict.ok()
