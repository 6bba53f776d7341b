"""string_match / number_match, official and strict: one case per line."""

from __future__ import annotations

from typing import Any

import pytest

from querybench.errors import ErrorCode
from querybench.evaluation.spider2.agentic.text import (
    number_match,
    official_numbers,
    strict_number_match,
    strict_numbers,
    strict_string_match,
    string_match,
)
from querybench.evaluation.verdict import Verdict


def outcome(verdict: Verdict) -> int | str:
    """1 / 0 for a plain verdict, the error code for anything but `wrong_result`."""
    if verdict.error not in (None, ErrorCode.WRONG_RESULT):
        return str(verdict.error)
    assert (verdict.error is None) == verdict.passed
    return int(verdict.score)


# pred, gold, conj, exclude, official, strict
STRING_CASES: list[tuple[str, Any, str, Any, int | str, int | str]] = [
    ("The answer is Bentley", "Bentley", "or", [], 1, 1),
    ("BENTLEY", ["bentley"], "or", [], 1, 1),
    ("Bentley, not Wren", "Bentley", "or", ["Wren"], 0, 0),
    ("Wren", ["Bentley", "Wren"], "or", [], 1, 1),
    ("Cook, Lake and Will", ["Cook", "Lake", "Will"], "and", [], 1, 1),
    ("Cook and Lake", ["Cook", "Lake", "Will"], "and", [], 0, 0),
    # substring inside a longer token
    ("the id is 1357", "357", "or", [], 1, 0),
    ("Flash Cabs", ["Flash Cab"], "or", [], 1, 0),
    ("MO and more", ["MO", "VA"], "and", [], 0, 0),
    ("more values", ["MO", "VA"], "and", [], 1, 0),
    ("it is 9, maybe", ["9", "September"], "or", ["May"], 0, 1),
    ("Te Mi Ok Ne Ka because", ["Te", "Mi", "Ok", "Ne", "Ka"], "and", ["Ca", "Tx"], 0, 1),
    # whitespace and case folding
    ("Google\nSunglasses", "Google Sunglasses", "or", [], 0, 1),
    ("STRASSE", "Straße", "or", [], 0, 1),
    ("North America (AMT, current US$)", ["(AMT, current US$)"], "or", [], 1, 1),
    # degenerate configs
    ("anything", [], "and", [], 1, "gold_error"),
    ("anything", [], "or", [], 0, "gold_error"),
    ("anything", ["x", ""], "or", [], 1, "gold_error"),
    ("Bentley", "Bentley", "or", [""], 0, "gold_error"),
    ("Bentley", "Bentley", "or", "xe", 0, 1),  # a bare string excludes each of its characters
    ("Bentley", "Bentley", "xor", [], "gold_error", "gold_error"),
    ("357", 357, "or", [], "gold_error", "gold_error"),
]


@pytest.mark.parametrize(("pred", "gold", "conj", "exclude", "official", "strict"), STRING_CASES)
def test_string_match(
    pred: str, gold: Any, conj: str, exclude: Any, official: int | str, strict: int | str
) -> None:
    assert outcome(string_match(pred, gold, conj, exclude)) == official
    assert outcome(strict_string_match(pred, gold, conj, exclude)) == strict


# pred, gold, keyword parameters, official, strict
NUMBER_CASES: list[tuple[str, Any, dict[str, Any], int | str, int | str]] = [
    ("The total is 43", ["43"], {}, 1, 1),
    ("43", "43.00001", {}, 1, 1),
    ("43", "43.001", {}, 0, 0),
    ("43", "43.001", {"precision": 2}, 1, 1),
    ("12.3456", "12.34565", {}, 1, 1),
    ("1,234 rows", "1234", {}, 1, 1),
    ("It is 50%", "0.5", {}, 1, 1),
    # exactly one number for a single gold ...
    ("43 rows in 2024", ["43"], {}, 0, 0),
    ("43 rows in 2024", 52.8, {}, 0, 0),
    # ... but an int gold escapes the rule
    ("Top 10, of which 9 are new", 9, {}, 1, 0),
    ("9", 9, {}, 1, 1),
    # signs, exponents, leading dots, numbers glued to letters
    ("-5", "5", {}, 1, 0),
    ("-5", "-5", {}, 0, 1),
    ("1.5e10", "1.5", {}, 1, 0),
    ("1.5e10", "15000000000", {}, 0, 1),
    (".5", "5", {}, 1, 0),
    (".5", "0.5", {}, 0, 1),
    ("5.5km", "5.5", {}, 1, 0),
    ("5km", "5", {}, 0, 0),
    # percentage
    ("0.5", "0.5", {"percentage": True}, 1, 1),
    ("50", "0.5", {"percentage": True}, 1, 1),
    ("50%", "0.5", {"percentage": True}, 1, 1),
    ("10.7966", "10.79661512", {"percentage": True}, 1, 1),
    ("10.7966%", "10.79661512", {"percentage": True}, 0, 1),
    ("0.5", ["0.5"], {"percentage": True, "conj": "and"}, 0, 1),
    (
        "-0.0945, -0.1004 and -0.1141",
        ["-0.0945", "-0.1004", "-0.1141"],
        {"percentage": True, "conj": "and"},
        0,
        1,
    ),
    # several gold values
    ("1 and 2", ["1", "2"], {"conj": "and"}, 1, 1),
    ("1 and 3", ["1", "2"], {"conj": "and"}, 0, 0),
    ("1 and 3", ["1", "2"], {}, 1, 1),
    ("1", ["1", "1.00001"], {"conj": "and"}, 1, 0),
    ("1 2 3 4 5 6 7", ["7", "70"], {}, 1, 1),  # kept: no limit on numbers under "or"
    ("10,20,300", ["10", "20300"], {"conj": "and"}, 1, 1),  # kept: commas group thousands
    # the tolerance boundary under binary rounding
    ("0.1234", "0.1235", {}, 0, 1),
    ("12.3456", "12.3457", {}, 0, 1),
    # degenerate configs
    ("5", [], {"conj": "and"}, 1, "gold_error"),
    ("5", "five", {}, "gold_error", "gold_error"),
    ("5", "5", {"conj": "xor"}, "gold_error", "gold_error"),
    ("5", "5", {"precision": "4"}, "gold_error", "gold_error"),
]


@pytest.mark.parametrize(("pred", "gold", "params", "official", "strict"), NUMBER_CASES)
def test_number_match(
    pred: str, gold: Any, params: dict[str, Any], official: int | str, strict: int | str
) -> None:
    assert outcome(number_match(pred, gold, **params)) == official
    assert outcome(strict_number_match(pred, gold, **params)) == strict


NUMBERS_TEXT = "a 1,234.5% b .5 -3 1e5 5km 5.5km 2020-01-05 3.14.15 10,20,300"


def test_official_number_reader() -> None:
    assert official_numbers(NUMBERS_TEXT) == [
        *("1,234.5%", "5", "3", "5.5", "2020", "01", "05", "3.14", "15", "10", "20,300"),
    ]


def test_strict_number_reader() -> None:
    read = [(n.value, n.percent) for n in strict_numbers(NUMBERS_TEXT + " \u22122")]
    assert read == [
        (1234.5, True),
        (0.5, False),
        (-3.0, False),
        (1e5, False),
        (2020.0, False),
        (1.0, False),
        (5.0, False),
        (10.0, False),
        (20300.0, False),
        (-2.0, False),
    ]


def test_failures_say_why() -> None:
    verdict = number_match("43 in 2024", ["43"])
    assert verdict.error == ErrorCode.WRONG_RESULT
    assert verdict.message == "expected exactly one number, found 2"
    assert string_match("Wren", "Bentley", exclude=["wren"]).message == "excluded text 'wren' found"
