"""Pull the SQL out of a model's answer: raw SQL, or prose around a fenced code block."""

from __future__ import annotations

import re
from collections.abc import Iterator

# An opening fence line (``` or longer, optional info string), matched at a line's start; its
# block runs to the first line that closes it (the same fence, or longer), or to the end of the
# text when the answer was cut off mid-block. Lines are found with `str.find` on the backticks
# (a lazy `.*?` over the body tried the closing pattern at every character).
_OPENING = re.compile(r"[ \t]*(?P<fence>`{3,})[ \t]*(?P<info>[^\n`]*)\n")
# A closing line: backticks alone on it, at least as many as the fence opening the block.
_CLOSING = re.compile(r"[ \t]*(?P<fence>`+)[ \t]*$", re.MULTILINE)
# The whole answer on one line: ```SELECT 1``` or ```sql SELECT 1```.
_INLINE = re.compile(r"^`{3,}(?:sql\b)?(?P<body>[^`]*)`{3,}$", re.IGNORECASE)


def extract_sql(text: str) -> str | None:
    """The SQL in `text`, or None when there is none.

    The first fenced block tagged as SQL (```sql, ```sqlite, ```postgresql, ...) wins; failing
    that, the first untagged block. A block tagged with another language is never taken. Text
    without any fence is taken whole, as raw SQL. Surrounding whitespace is stripped; an empty
    result is None.
    """
    blocks = list(_fenced_blocks(text, 0))
    if not blocks:
        inline = _INLINE.match(text.strip())
        return _non_empty(inline.group("body") if inline else text)
    for language, body in blocks:
        if "sql" in language:
            return _non_empty(body)
    for language, body in blocks:
        if not language:
            return _non_empty(body)
    return None


def sql_block(text: str) -> str | None:
    """The body of the first ```sql block (the info string's first word `sql`, any case), or
    None: a bare ``` block, a ```sqlite or ```python block and unfenced text are not one."""
    first = text.find("```")
    if first < 0:
        return None
    if text.startswith("```sql\n", first) and (first == 0 or text[first - 1] == "\n"):
        # The answer asked for (a line "```sql" and, below it, a closing line): read at once,
        # as the general scan below reads it; anything else takes the scan.
        start = first + 7
        hit = text.find("```", start)
        if hit < 0:  # cut off mid-block
            return _non_empty(text[start:])
        close = text.rfind("\n", 0, hit) + 1
        closing = _CLOSING.match(text, close)
        if closing is not None and len(closing.group("fence")) >= 3:
            return _non_empty(text[start:close])
    return scanned_sql_block(text, first)


def scanned_sql_block(text: str, first: int) -> str | None:
    """`sql_block` by the general scan, from `first`, the first backticks of `text`."""
    # No fence opens before the line of the first backticks: skip the prose above it (an RL
    # answer's reasoning).
    for language, body in _fenced_blocks(text, text.rfind("\n", 0, first) + 1):
        if language == "sql":
            return _non_empty(body)
    return None


def _fenced_blocks(text: str, pos: int) -> Iterator[tuple[str, str]]:
    """(language, body) of each fenced block whose opening line starts at or after `pos`."""
    while True:
        opening = _line_match(text, _OPENING, "```", pos)
        if opening is None:
            return
        fence, start = opening.group("fence"), opening.end()
        close = _line_match(text, _CLOSING, fence, start)
        end, pos = (len(text), len(text)) if close is None else (close.start(), close.end())
        yield _language(opening.group("info")), text[start:end]


def _line_match(text: str, pattern: re.Pattern[str], fence: str, pos: int) -> re.Match[str] | None:
    """`pattern` matched at the start of the first line at or after `pos` that holds `fence`
    and where the fence it matches is at least as long. Each line is looked at once."""
    at = pos
    while (hit := text.find(fence, at)) >= 0:
        line = text.rfind("\n", 0, hit) + 1
        if line >= pos:
            match = pattern.match(text, line)
            if match is not None and len(match.group("fence")) >= len(fence):
                return match
        at = text.find("\n", hit) + 1
        if at == 0:  # the last line
            return None
    return None


def _language(info: str) -> str:
    words = info.strip().lower().split()
    return words[0] if words else ""


def _non_empty(sql: str) -> str | None:
    sql = sql.strip()
    return sql or None
