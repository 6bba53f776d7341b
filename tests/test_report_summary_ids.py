"""Error messages grouped by cause: the instance's own id made generic, as the regex
`(?<![\\w.])<id>(?!\\w)` would, without compiling one regex per instance."""

from __future__ import annotations

import random
import re

import pytest

from querybench.report.summary import _generic


def regex_generic(message: str, instance_id: str) -> str:
    if not re.search(r"[A-Za-z]", instance_id):
        return message
    return re.sub(rf"(?<![\w.]){re.escape(instance_id)}(?!\w)", "<id>", message)


@pytest.mark.parametrize(
    ("message", "instance_id", "expected"),
    [
        ("no bq001.csv", "bq001", "no <id>.csv"),
        ("bq001 and bq001", "bq001", "<id> and <id>"),
        ("xbq001 bq0012 .bq001 _bq001 bq001_", "bq001", "xbq001 bq0012 .bq001 _bq001 bq001_"),
        ("bq001bq001 bq001", "bq001", "bq001bq001 <id>"),
        ("row 17 of 17.csv", "17", "row 17 of 17.csv"),  # a numeric id is left alone
        ("éa1 a1é a1", "a1", "éa1 a1é <id>"),  # unicode letters are word characters
        ("", "a1", ""),
    ],
)
def test_ids_made_generic(message: str, instance_id: str, expected: str) -> None:
    assert _generic(message, instance_id) == expected
    assert regex_generic(message, instance_id) == expected


def test_agrees_with_the_regex_on_random_messages() -> None:
    rng = random.Random(7)
    pieces = ["a", "b", "1", "_", ".", "-", " ", "é", "٣", "bq1"]
    for _ in range(20_000):
        iid = "".join(rng.choice(["a", "b", "1", "_", "bq", ".", "é"]) for _ in range(3))
        message = "".join(rng.choice([*pieces, iid, iid]) for _ in range(rng.randint(0, 8)))
        assert _generic(message, iid) == regex_generic(message, iid), (message, iid)
