"""Punkt's sentence splitting with the trained English model, as the official Spider 1.0 tokenizer
meets it through `nltk.word_tokenize`. Each token list is what nltk 3.10.4 with nltk_data's
`punkt_tab/english` gives through the official `process_sql.tokenize`; each case names the rule of
Punkt (or of the regex engine nltk runs) that decides it."""

from __future__ import annotations

import pytest

from querybench.tasks.spider1_punkt import english_model, sentences
from querybench.tasks.spider1_tokens import tokenize_sql


@pytest.mark.parametrize(
    ("sql", "tokens"),
    [
        # An abbreviation before a capitalised word the model has seen in lower case and never
        # capitalised inside a sentence ("him"): the orthographic heuristic ends the sentence.
        ("SELECT a FROM st. Him", ["select", "a", "from", "st", ".", "him"]),
        # A number before a lower-case word the model has seen starting a sentence in lower case
        # and never in upper case ("administrators"): "unknown", so the period stays a break.
        (
            "SELECT a LIMIT 1. administrators",
            ["select", "a", "limit", "1", ".", "administrators"],
        ),
        # An initial before a capitalised word the model has seen in lower case ("name"): the
        # special initial rule does not apply, the break stays.
        ("SELECT x. Name FROM t", ["select", "x", ".", "name", "from", "t"]),
        # A collocation of the model (##number##, who): never a break.
        ("SELECT a LIMIT 1. Who", ["select", "a", "limit", "1.", "who"]),
        # The context of a candidate is the word before it and the whole token after it: "x." in
        # "x.)" is a break with a token after it, so the cut falls after "inc.".
        ("SELECT a FROM inc.  x.) b", ["select", "a", "from", "inc", ".", "x", ".", ")", "b"]),
        (
            "SELECT a FROM co. (x.) Name",
            ["select", "a", "from", "co", ".", "(", "x", ".", ")", "name"],
        ),
        # U+001C is no whitespace to the regex engine: ";\x1cvs." is one word, no abbreviation.
        ("SELECT a FROM t;\x1cvs. from", ["select", "a", "from", "t", ";", "vs", ".", "from"]),
        # A superscript two is no word character to the regex engine: "²." is no initial.
        ("SELECT \u00b2. Name", ["select", "\u00b2", ".", "name"]),
        # U+10D40 is a digit since Unicode 16: a comma before it stays with the word.
        ("SELECT a,\U00010d40 FROM t", ["select", "a,\U00010d40", "from", "t"]),
    ],
)
def test_sentence_ends_follow_the_trained_english_model(sql: str, tokens: list[str]) -> None:
    assert tokenize_sql(sql) == tokens


def test_closing_brackets_after_a_cut_stay_with_the_sentence_before() -> None:
    assert sentences("(Sent1.) Sent2.") == ["(Sent1.)", "Sent2."]  # nltk's own example


def test_the_model_is_nltk_datas_english_punkt_tab() -> None:
    model = english_model()
    assert (len(model.abbreviations), len(model.collocations)) == (156, 37)
    assert (len(model.sentence_starters), len(model.orthographic_context)) == (39, 20366)
    assert {"st", "u.s.a", ". . "} <= model.abbreviations
    assert ("##number##", "who") in model.collocations
    assert model.orthographic_context["him"] == 96  # lower case in and at sentence starts
