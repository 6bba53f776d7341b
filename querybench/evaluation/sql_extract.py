"""Pull the SQL out of a model's answer: raw SQL, or prose around a fenced code block."""

from __future__ import annotations

import re

# An opening fence (``` or longer, optional info string) up to the matching closing fence, or
# to the end of the text when the answer was cut off mid-block.
_FENCE = re.compile(
    r"^[ \t]*(?P<fence>`{3,})[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*?)"
    r"(?:^[ \t]*(?P=fence)`*[ \t]*$|\Z)",
    re.DOTALL | re.MULTILINE,
)
# The whole answer on one line: ```SELECT 1``` or ```sql SELECT 1```.
_INLINE = re.compile(r"^`{3,}(?:sql\b)?(?P<body>[^`]*)`{3,}$", re.IGNORECASE)


def extract_sql(text: str) -> str | None:
    """The SQL in `text`, or None when there is none.

    The first fenced block tagged as SQL (```sql, ```sqlite, ```postgresql, ...) wins; failing
    that, the first untagged block. A block tagged with another language is never taken. Text
    without any fence is taken whole, as raw SQL. Surrounding whitespace is stripped; an empty
    result is None.
    """
    blocks = [(_language(m.group("info")), m.group("body")) for m in _FENCE.finditer(text)]
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
    # No fence opens before the line of the first backticks: skip the prose above it (an RL
    # answer's reasoning) rather than try the pattern at each of its lines.
    for match in _FENCE.finditer(text, text.rfind("\n", 0, first) + 1):
        if _language(match.group("info")) == "sql":
            return _non_empty(match.group("body"))
    return None


def _language(info: str) -> str:
    words = info.strip().lower().split()
    return words[0] if words else ""


def _non_empty(sql: str) -> str | None:
    sql = sql.strip()
    return sql or None
