"""Spider 1.0 exact match: the official tokenizer, re-implemented.

The official parser (`process_sql.tokenize` of the Spider / test-suite evaluation) turns every
`'` into `"`, hides each quoted pair behind a placeholder, runs `nltk.word_tokenize`
(Punkt sentence splitting, then `NLTKWordTokenizer`), lower-cases the tokens, puts the quoted
strings back (case kept) and joins `!`, `>`, `<` with a following `=`. Its quirks are the
contract: `a=1` stays one token, `1,2` stays one token, a column named `cannot` is two tokens.

nltk is not a dependency: on text whose strings are hidden only a handful of its rules can
fire, and they are written out here, on the engines nltk 3.10 runs them on: `regex` for all
but the contraction rules, which it compiles with Python's `re` (the two disagree on
whitespace, word characters, digits and word boundaries for some characters). Punkt matters in
one way only: a token ending in a single `.` that Punkt takes for a sentence end has that
period split off (the tokenizer's final-period rule runs per sentence). The sentences are
Punkt's with the trained English model (`spider1_punkt.py`).
"""

from __future__ import annotations

import re

import regex

from querybench.errors import SqlTokenError
from querybench.tasks.spider1_punkt import sentences

# NLTKWordTokenizer's rules that can match once strings are hidden, in its order, each with the
# characters without which it cannot match (the rule is skipped on text that has none of them).
_RULES: tuple[tuple[regex.Pattern[str], str, str], ...] = (
    (regex.compile("([\u00ab\u201c\u2018\u201e]|[`]+)"), r" \1 ", "\u00ab\u201c\u2018\u201e`"),
    (regex.compile(r"(``)"), r" \1 ", "`"),
    (regex.compile(r'([^\.])(\.)([\]\)}>"\'' "\u00bb\u201d\u2019 " r"]*+)\s*$"), r"\1 \2 \3 ", "."),
    (regex.compile(r"([:,])([^\d])"), r" \1 \2", ":,"),
    (regex.compile(r"([:,])$"), r" \1 ", ":,"),
    (regex.compile(r"\.{2,}"), r" \g<0> ", "."),
    (regex.compile(r"[;@#$%&]"), r" \g<0> ", ";@#$%&"),
    (regex.compile(r"[\u2012-\u2015]"), r" \g<0> ", "\u2012\u2013\u2014\u2015"),
    (regex.compile(r'([^\.])(\.)([\]\)}>"\']*)\s*$'), r"\1 \2\3 ", "."),
    (regex.compile(r"[?!]"), r" \g<0> ", "?!"),
    (regex.compile(r"([^'])' "), r"\1 ' ", "'"),
    (regex.compile(r"[*]"), r" \g<0> ", "*"),
    (regex.compile(r"[\]\[\(\)\{\}\<\>]"), r" \g<0> ", "[](){}<>"),
    (regex.compile(r"--"), r" -- ", "-"),
)
# Its ending rules: quotes and clitics (whitespace is collapsed only for the clitic rules, the
# only ones that read a space), then the contractions, each with the text that triggers it.
_SPACED: tuple[tuple[regex.Pattern[str], str, str], ...] = (
    (regex.compile("([\u00bb\u201d\u2019])"), r" \1 ", "\u00bb\u201d\u2019"),
    (regex.compile(r"''"), " '' ", "'"),
    (regex.compile(r'"'), " '' ", '"'),
    (regex.compile(r"\s+"), " ", "'"),
    (regex.compile(r"([^' ])('[sS]|'[mM]|'[dD]|') "), r"\1 \2 ", "'"),
    (regex.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 ", "'"),
)
_CONTRACTIONS = tuple(
    (re.compile(pattern), trigger)  # on Python's re, as nltk compiles them (its \b differs)
    for pattern, trigger in (
        (r"(?i)\b(can)(?#X)(not)\b", "cannot"),
        (r"(?i)\b(d)(?#X)('ye)\b", "d'ye"),
        (r"(?i)\b(gim)(?#X)(me)\b", "gimme"),
        (r"(?i)\b(gon)(?#X)(na)\b", "gonna"),
        (r"(?i)\b(got)(?#X)(ta)\b", "gotta"),
        (r"(?i)\b(lem)(?#X)(me)\b", "lemme"),
        (r"(?i)\b(more)(?#X)('n)\b", "more'n"),
        (r"(?i)\b(wan)(?#X)(na)(?=\s)", "wanna"),
        (r"(?i) ('t)(?#X)(is)\b", "'tis"),
        (r"(?i) ('t)(?#X)(was)\b", "'twas"),
    )
)


def tokenize_sql(sql: str) -> list[str]:
    """The official token list of `sql` (lower-cased, quoted strings kept as written)."""
    text = sql.replace("'", '"')
    quotes = [i for i, char in enumerate(text) if char == '"']
    if len(quotes) % 2:
        raise SqlTokenError("Unexpected quote")
    strings: dict[str, str] = {}
    for k in range(len(quotes) - 1, -1, -2):
        start, end = quotes[k - 1], quotes[k]
        key = f"__val_{start}_{end}__"
        strings[key] = text[start : end + 1]
        text = text[:start] + key + text[end + 1 :]
    tokens = [strings.get(t, t) for t in (w.lower() for w in word_tokenize(text))]
    for at in reversed([i for i, t in enumerate(tokens) if t == "="]):
        before = tokens[at - 1]  # at 0 this is the last token, as in the official list code
        if before in ("!", ">", "<"):
            tokens = [*tokens[: at - 1], before + "=", *tokens[at + 1 :]]
    return tokens


def _finish(text: str) -> list[str]:
    text = " " + text + " "
    for regexp, substitution, triggers in _SPACED:
        if any(c in text for c in triggers):
            text = regexp.sub(substitution, text)
    lower = text.lower()
    for contraction, trigger in _CONTRACTIONS:
        if trigger in lower:
            text = contraction.sub(r" \1 \2 ", text)
    return text.split()


def _tokenize_sentence(text: str) -> str:
    for regexp, substitution, triggers in _RULES:
        if any(c in text for c in triggers):
            text = regexp.sub(substitution, text)
    return text


def word_tokenize(text: str) -> list[str]:
    """`nltk.word_tokenize(text)` for text without quotes (see the module text)."""
    return _finish(" ".join(_tokenize_sentence(s) for s in sentences(text)))
