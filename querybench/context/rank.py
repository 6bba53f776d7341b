"""Lexical relevance: a compact Okapi BM25 over identifier-aware terms.

Own code rather than a library: the corpora are small (one database's tables, one document's
chunks, a few hundred function docs), the query mixes the question with weighted document terms,
and terms come from identifiers (`snake_case`, `camelCase`) that generic tokenisers keep whole.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

_WORD = re.compile(r"[A-Za-z]+|\d+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "what",
        "which",
        "who",
        "whom",
        "with",
        "each",
        "per",
        "all",
        "any",
        "how",
        "many",
        "much",
        "than",
        "then",
        "there",
        "their",
        "these",
        "those",
        "do",
        "does",
        "did",
        "i",
        "me",
        "my",
        "we",
        "our",
        "you",
        "your",
        "please",
        "give",
        "show",
        "list",
        "find",
        "return",
        "get",
        "between",
        "also",
        "into",
        "over",
        "under",
        "about",
        "after",
        "before",
        "during",
        "only",
        "not",
        "no",
    ]
)


def terms(text: str) -> list[str]:
    """Lower-case word terms, identifiers split at `_` and camelCase; light plural folding."""
    out = []
    for word in _WORD.findall(_CAMEL.sub(" ", text)):
        w = word.lower()
        if w in STOPWORDS or (len(w) == 1 and not w.isdigit()):
            continue
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(w)
    return out


class BM25:
    """Okapi BM25 over pre-tokenised documents; `scores` gives one score per document."""

    def __init__(self, docs: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.tfs = [Counter(d) for d in docs]
        self.lengths = [len(d) for d in docs]
        self.avg = (sum(self.lengths) / len(docs)) if docs else 0.0
        df: Counter[str] = Counter()
        for tf in self.tfs:
            df.update(tf.keys())
        n = len(docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def scores(self, query: dict[str, float] | Iterable[str]) -> list[float]:
        weights = query if isinstance(query, dict) else dict(Counter(query))
        weights = {t: w for t, w in weights.items() if t in self.idf}
        out = []
        for tf, length in zip(self.tfs, self.lengths, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / self.avg) if self.avg else self.k1
            s = 0.0
            for t, w in weights.items():
                f = tf.get(t)
                if f:
                    s += w * self.idf[t] * f * (self.k1 + 1) / (f + norm)
            out.append(s)
        return out


def query_weights(question: str, extra: str = "", extra_weight: float = 0.3) -> dict[str, float]:
    """Question terms count fully; terms of supporting text (a task document) count less."""
    weights: dict[str, float] = {}
    for t in terms(extra):
        weights[t] = min(weights.get(t, 0.0) + extra_weight, 1.0)
    for t in terms(question):
        weights[t] = weights.get(t, 0.0) + 1.0
    return weights
