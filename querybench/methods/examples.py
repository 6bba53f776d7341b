"""A few-shot example pool and DAIL-SQL's example selection, offline.

Spider 2.0 has no train split, so the pool is the user's: `--examples spider1` (or `bird`,
`bird-train`: any benchmark whose tasks carry gold SQL) or a JSON/JSONL file of
`{"question": ..., "sql": ...}` objects (`query` / `SQL` also read). The task being solved, and
any example asking the very same question, is never shown as its own example.

Selection follows DAIL-SQL (Gao et al., 2023) with lexical similarity instead of embeddings:

1. *masked question similarity*: values (numbers, quoted strings) become `<value>` and
   domain words (terms of the task's schema identifiers; for an example, of the identifiers
   its gold SQL names) become `<mask>`, so questions compare by intent, not by domain; the
   masked questions are ranked with BM25;
2. *skeleton similarity*: among the best questions, examples whose SQL skeleton (keywords and
   operators kept, names and values masked) is close to the skeleton of a preliminary
   prediction (similarity >= `SKELETON_THRESHOLD`) come first, in question order.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from querybench import json_input
from querybench.context.rank import BM25, terms
from querybench.errors import DataError
from querybench.tasks.input_files import read_text

SKELETON_THRESHOLD = 0.8
SHORTLIST = 4  # skeletons are compared over the SHORTLIST * k best questions

_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'|“[^”]*”")
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")
_WORD = re.compile(r"<value>|[A-Za-z_][A-Za-z0-9_]*|\d+")
_SQL_TOKEN = re.compile(
    r"'(?:[^']|'')*'|\"[^\"]*\"|`[^`]*`|\[[^\]]*\]|\d+(?:\.\d+)?|[A-Za-z_][\w$.]*|"
    r"<>|!=|>=|<=|\|\||[^\s\w]"
)
_KEYWORD_TEXT = """select distinct from where group by having order asc desc limit offset join
inner left right full outer cross on using as and or not in is null like ilike between exists
case when then else end union all intersect except with count sum avg min max cast over
partition rows range qualify unnest true false"""
SQL_KEYWORDS = frozenset(_KEYWORD_TEXT.split())


@dataclass(frozen=True)
class Example:
    question: str
    sql: str
    key: str = ""  # "<benchmark>:<instance_id>", to keep a task from being its own example


def get_pool(spec: str, data_dir: Path | None = None) -> ExamplePool:
    """The pool named by `spec` (a benchmark name or a JSON/JSONL file), read once per run."""
    cache_key = (spec, str(data_dir))
    with _LOCK:
        if cache_key not in _POOLS:
            _POOLS[cache_key] = ExamplePool(_read_pool(spec, data_dir))
        return _POOLS[cache_key]


def _read_pool(spec: str, data_dir: Path | None) -> list[Example]:
    path = Path(spec).expanduser()
    if path.suffix.lower() in (".json", ".jsonl") or path.is_file():
        return _read_file(path)
    from querybench.tasks import BENCHMARKS, load_tasks

    if spec not in BENCHMARKS:
        raise DataError(
            f"--examples {spec!r} is neither a JSON/JSONL file nor a benchmark "
            f"({', '.join(BENCHMARKS)})"
        )
    tasks = load_tasks(spec, data_dir=data_dir)
    return [
        Example(t.question, t.gold.sql, f"{t.benchmark}:{t.instance_id}")
        for t in tasks
        if t.gold.sql
    ]


def _read_file(path: Path) -> list[Example]:
    text = read_text(path, "example pool")
    if path.suffix.lower() == ".jsonl":
        items = [(i, line) for i, line in enumerate(text.splitlines(), 1) if line.strip()]
        parsed = []
        for line_no, line in items:
            try:
                parsed.append((f"{path}:{line_no}", json_input.loads(line)))
            except ValueError as exc:
                raise DataError(f"{path}:{line_no}: not JSON ({exc})") from None
    else:
        try:
            data = json_input.loads(text)
        except ValueError as exc:
            raise DataError(f"{path}: not JSON ({exc})") from None
        if not isinstance(data, list):
            raise DataError(f"{path}: expected a JSON array of examples")
        parsed = [(f"{path}[{i}]", item) for i, item in enumerate(data)]
    out = []
    for where, item in parsed:
        sql = _first(item, ("sql", "query", "SQL")) if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(item.get("question"), str) or not sql:
            raise DataError(f"{where}: an example needs 'question' and 'sql' strings")
        out.append(Example(item["question"], str(sql)))
    return out


def _first(item: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        if isinstance(item.get(key), str) and item[key].strip():
            return str(item[key])
    return None


def mask_question(question: str, domain: Iterable[str]) -> list[str]:
    """Lower-case tokens of `question` with values as `<value>` and domain terms as `<mask>`."""
    words = set(domain)
    text = _NUMBER.sub(" <value> ", _QUOTED.sub(" <value> ", question))
    out = []
    for token in _WORD.findall(text):
        if token == "<value>":
            out.append(token)
            continue
        split = terms(token)
        out.append("<mask>" if split and all(t in words for t in split) else token.lower())
    return out


def sql_identifier_terms(sql: str) -> set[str]:
    """Terms of the names an SQL query uses (tables, columns, aliases)."""
    out: set[str] = set()
    for token in _SQL_TOKEN.findall(sql):
        is_name = token[0] in '"`[' or token[0].isalpha() or token[0] == "_"
        if is_name and token.lower() not in SQL_KEYWORDS:
            out.update(terms(token.strip('"`[]')))
    return out


def sql_skeleton(sql: str) -> list[str]:
    """Keywords and operators of `sql`; names and values become `_` (runs collapsed)."""
    out: list[str] = []
    for token in _SQL_TOKEN.findall(sql):
        word = token.lower()
        if word in SQL_KEYWORDS:
            out.append(word)
        elif token[0].isalnum() or token[0] in "'\"`[_" or token == ".":
            if not out or out[-1] != "_":
                out.append("_")
        elif token not in ";":
            out.append(token)
    return out


def skeleton_similarity(a: str, b: str) -> float:
    return SequenceMatcher(None, sql_skeleton(a), sql_skeleton(b), autojunk=False).ratio()


class ExamplePool:
    """Examples with their masked questions indexed for BM25."""

    def __init__(self, examples: Sequence[Example]) -> None:
        self.examples = tuple(examples)
        masked = [mask_question(e.question, sql_identifier_terms(e.sql)) for e in self.examples]
        self._index = BM25(masked) if masked else None

    def select(
        self,
        question: str,
        domain: Iterable[str],
        k: int,
        *,
        exclude: str = "",
        preliminary_sql: str | None = None,
    ) -> list[Example]:
        """The `k` examples for `question`: by masked question similarity, then (given a
        preliminary prediction) those of a similar skeleton first."""
        if self._index is None or k <= 0:
            return []
        scores = self._index.scores(mask_question(question, domain))
        same = " ".join(question.split()).lower()
        order = [
            i
            for i in sorted(range(len(scores)), key=lambda i: (-scores[i], i))
            if self.examples[i].key != exclude or not exclude
            if " ".join(self.examples[i].question.split()).lower() != same
        ]
        if preliminary_sql is None:
            return [self.examples[i] for i in order[:k]]
        shortlist = order[: SHORTLIST * k]
        close = [
            i
            for i in shortlist
            if skeleton_similarity(preliminary_sql, self.examples[i].sql) >= SKELETON_THRESHOLD
        ]
        rest = [i for i in shortlist if i not in close]
        return [self.examples[i] for i in (close + rest)[:k]]


_LOCK = threading.Lock()
_POOLS: dict[tuple[str, str], ExamplePool] = {}
