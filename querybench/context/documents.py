"""External knowledge (a task's document) and dialect function docs, chosen by relevance."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from querybench import json_input
from querybench.context.function_docs import BY_DIALECT, COMMON
from querybench.context.rank import BM25, terms
from querybench.context.tokens import count_tokens
from querybench.errors import DataError
from querybench.tasks.input_files import read_text

_CHUNK_TOKENS = 250
_HEADING = re.compile(r"^#{1,6}\s", re.MULTILINE)


@dataclass(frozen=True)
class FunctionDoc:
    name: str
    text: str  # one line a model reads: signature and what it does


def document_chunks(text: str) -> list[str]:
    """Paragraph-aligned chunks of about `_CHUNK_TOKENS` tokens; a heading starts a new chunk."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for p in paragraphs:
        n = count_tokens(p)
        if current and (size + n > _CHUNK_TOKENS or _HEADING.match(p)):
            chunks.append("\n\n".join(current))
            current, size = [], 0
        current.append(p)
        size += n
    if current:
        chunks.append("\n\n".join(current))
    return chunks


def select_document(text: str, weights: dict[str, float], budget: int) -> tuple[str, bool]:
    """The whole document when it fits in `budget`, else its most relevant chunks in document
    order (whole chunks only). Returns the text and whether it is complete."""
    if count_tokens(text) <= budget:
        return text, True
    chunks = document_chunks(text)
    scores = BM25([terms(c) for c in chunks]).scores(weights)
    order = sorted(range(len(chunks)), key=lambda i: (-scores[i], i))
    chosen: list[int] = []
    used = 0
    for i in order:
        n = count_tokens(chunks[i]) + 2
        if used + n <= budget:
            chosen.append(i)
            used += n
    return "\n\n".join(chunks[i] for i in sorted(chosen)), False


@lru_cache(maxsize=4)
def bigquery_functions(syntax_dir: Path) -> tuple[FunctionDoc, ...]:
    """BigQuery function docs from `resource/syntax/bigquery_functions/bigquery_functions.json`."""
    path = syntax_dir / "bigquery_functions" / "bigquery_functions.json"
    try:
        categories = json_input.loads(read_text(path, "BigQuery function docs"))
        docs = []
        for category in categories:
            for fn in category["functions"].values():
                signature = str(fn.get("description", "")).strip().split("\n", 1)[0]
                summary = " ".join(str(fn.get("summary", "")).split())
                text = f"{signature} — {summary}" if signature and "(" in signature else summary
                docs.append(FunctionDoc(str(fn["name"]), text))
    except FileNotFoundError as exc:
        raise DataError(f"BigQuery function docs not found: {path}") from exc
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DataError(f"{path}: malformed function docs ({exc})") from exc
    return tuple(docs)


def dialect_functions(dialect: str, syntax_dir: Path | None) -> tuple[FunctionDoc, ...]:
    if dialect == "bigquery":
        if syntax_dir is None or not syntax_dir.is_dir():
            return ()
        return bigquery_functions(syntax_dir.resolve())
    own = {**COMMON, **BY_DIALECT.get(dialect, {})}
    return tuple(FunctionDoc(name, text) for name, text in own.items())


@lru_cache(maxsize=8)
def _function_index(docs: tuple[FunctionDoc, ...]) -> BM25:
    return BM25([terms(d.name) * 3 + terms(d.text) for d in docs])


def select_functions(
    docs: tuple[FunctionDoc, ...], weights: dict[str, float], limit: int
) -> list[FunctionDoc]:
    """The `limit` functions whose docs are most relevant to the question (score > 0)."""
    if not docs or limit <= 0:
        return []
    scores = _function_index(docs).scores(weights)
    order = sorted(range(len(docs)), key=lambda i: (-scores[i], i))
    chosen: dict[str, FunctionDoc] = {}
    for i in order:
        if scores[i] <= 0 or len(chosen) >= limit:
            break
        chosen.setdefault(docs[i].name, docs[i])  # one entry per name (overloads share it)
    return list(chosen.values())
