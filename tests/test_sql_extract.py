from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from querybench.evaluation.sql_extract import extract_sql, scanned_sql_block, sql_block

FENCE = "```"

CASES = [
    # (answer, expected SQL)
    ("SELECT 1", "SELECT 1"),
    ("  SELECT 1;\n", "SELECT 1;"),
    ("", None),
    ("   \n ", None),
    (f"Here you go:\n{FENCE}sql\nSELECT a\nFROM t;\n{FENCE}\nDone.", "SELECT a\nFROM t;"),
    (f"{FENCE}SQL\nSELECT 1\n{FENCE}", "SELECT 1"),
    (f"{FENCE}sqlite\nSELECT 1\n{FENCE}", "SELECT 1"),
    (f"{FENCE}postgresql\nSELECT 1\n{FENCE}", "SELECT 1"),
    # the first SQL block wins
    (f"{FENCE}sql\nSELECT 1\n{FENCE}\nor\n{FENCE}sql\nSELECT 2\n{FENCE}", "SELECT 1"),
    # a block tagged as SQL beats an earlier untagged one
    (f"{FENCE}\nnot this\n{FENCE}\n{FENCE}sql\nSELECT 2\n{FENCE}", "SELECT 2"),
    # an untagged block is taken when there is no SQL-tagged one
    (f"{FENCE}\nSELECT 3\n{FENCE}", "SELECT 3"),
    (f"{FENCE}python\nx = 1\n{FENCE}\n{FENCE}\nSELECT 4\n{FENCE}", "SELECT 4"),
    # only other languages: no SQL
    (f"{FENCE}python\nprint(1)\n{FENCE}", None),
    # an empty block is no SQL
    (f"{FENCE}sql\n{FENCE}", None),
    (f"{FENCE}sql\n   \n{FENCE}", None),
    # an answer cut off inside the block
    (f"Sure.\n{FENCE}sql\nSELECT 5\nFROM t", "SELECT 5\nFROM t"),
    # indented fences and longer fences
    (f"  {FENCE}sql\n  SELECT 6\n  {FENCE}", "SELECT 6"),
    (f"````sql\nSELECT '{FENCE}'\n````", f"SELECT '{FENCE}'"),
    # everything on one line
    (f"{FENCE}SELECT 7{FENCE}", "SELECT 7"),
    (f"{FENCE}sql SELECT 8{FENCE}", "SELECT 8"),
    # a block closes only on a line of backticks alone, at least as many as opened it
    (f"````sql\nSELECT 9\n{FENCE}\nSELECT 10\n`````  \n", f"SELECT 9\n{FENCE}\nSELECT 10"),
    (f"{FENCE}sql\nSELECT 11 -- {FENCE} here\n \t{FENCE}\t\nafter", f"SELECT 11 -- {FENCE} here"),
    # fences inside a line of prose open nothing
    (f"see x{FENCE}sql\nSELECT 12\n\n{FENCE}sql\nSELECT 13\n{FENCE}", "SELECT 13"),
]


@pytest.mark.parametrize(("answer", "expected"), CASES)
def test_extract_sql(answer: str, expected: str | None) -> None:
    assert extract_sql(answer) == expected


# Pieces an answer's text is made of: the shortcut `sql_block` takes for "```sql\n" at a line's
# start must find what the general scan finds, whatever surrounds and follows it.
_PIECES = ["```sql\n", "```", "````", "\n", " ", "\t", "x", "SELECT 1", "`", "```sql", "sql\n"]


@given(st.lists(st.sampled_from(_PIECES), max_size=12))
@settings(max_examples=600, deadline=None)
def test_sql_block_s_shortcut_agrees_with_the_general_scan(pieces: list[str]) -> None:
    text = "".join(pieces)
    first = text.find("```")
    expected = None if first < 0 else scanned_sql_block(text, first)
    assert sql_block(text) == expected


def test_sql_block_takes_the_usual_answer_and_its_cut_off_and_odd_closings() -> None:
    assert sql_block("think\n```sql\nSELECT 1\n```\nmore") == "SELECT 1"
    assert sql_block("```sql\nSELECT 1\n  ```  \n") == "SELECT 1"
    assert sql_block("```sql\nSELECT 2") == "SELECT 2"  # cut off
    # backticks inside a line do not close the block: the scan reads on
    assert sql_block("```sql\nSELECT '```'\nFROM t\n```") == "SELECT '```'\nFROM t"
    assert sql_block("x ```sql\nSELECT 3\n```") is None  # not at a line's start
