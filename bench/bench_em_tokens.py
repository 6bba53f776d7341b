"""The Spider 1.0 tokenizer against the official one, text by text, where Punkt decides.

    python -m bench.bench_em_tokens --official-test-suite TEST_SUITE \\
        --official-python OFFICIAL_PY [--generated 40000] [--seed 0] [--predictions FILE ...]

TEST_SUITE and OFFICIAL_PY as for `bench.bench_em` (OFFICIAL_PY with nltk and the trained
English Punkt model under `$NLTK_DATA/tokenizers/punkt_tab/english/`). The texts: every gold
query of dev_gold.sql, every line of each `--predictions` file, the near misses of
`bench.spider1_em_mutations`, and `--generated` texts made to meet Punkt's sentence splitting:
periods before lower- and upper-case words, abbreviations ("St.", "e.g.", "Inc.", "U.S.") inside
and outside quoted values, numbers with periods, initials, "t1." aliases, collocations of the
English model, ellipses, `?` and `!` glued to words, newlines and tabs, the contractions nltk
splits ("cannot", "gonna"), and the characters where the regex engine nltk uses and the
standard library's disagree on whitespace, word characters and digits (U+001C-U+001F,
superscripts, combining marks, digits newer than Unicode 14); a third of them are strings of
such characters drawn one by one. Each text goes through the official `process_sql.tokenize`
(`bench/spider1_tokens_official.py`) and through `tokenize_sql`; every text whose tokens (or
error) differ is printed, with both lists.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

from bench.bench_em import build_pairs
from querybench.errors import SqlTokenError
from querybench.tasks.spider1_tokens import tokenize_sql

WORDS = tuple(
    " ".join(
        (
            "select from where and or not in like join on as group by order limit having desc",
            "asc count max name age the however in it who smith business administrators louis",
            "i a x SELECT FROM WHERE AND OR NOT IN LIKE JOIN ON AS GROUP BY ORDER LIMIT HAVING",
            "DESC ASC The However In It Who Smith Business Administrators Louis I A From Select",
            "Where Name Count Many Since Sales Magnin Aron Edelman Levine Also Two Directors",
            "Monetary _x T2 t2 Him him cannot CANNOT gonna wanna gimme lemme gotta",
        )
    ).split(" ")
)
PERIOD_WORDS = tuple(
    " ".join(
        (
            "t1. T1. t2. st. St. ST. dr. Dr. co. Co. inc. Inc. mr. Mr. e.g. E.g. i.e. etc. vs.",
            "Vs. u.s. U.S. U.S.A. no. jan. Jan. 1. 12. 1.5. 3.14 .5. -1. 1,000. 1.2.3. a. b. B.",
            "x. J. I. i. s. S. ex-st. non-co. foo. x.. ... a.b. p.m. Ph.D. Calif. Sept. yr. Prof.",
            "m. __val_1_2__. count(*). t1.name. (1.) x.)",
        )
    ).split(" ")
)
PUNCTUATION = (
    *"(),;*=?!:@[]{}\u201c\u201d\u2018\u2019\xab\xbb\u2013",
    "!=",
    ">=",
    "<=",
    ".",
    "..",
    "--",
    "`",
    "\xe9.",
    "\xc9.",
    "\xb2.",  # a digit to str.isalnum, not a word character to the regex engine
    "a\u0301.",  # a combining mark
    ",\U00010d40",  # a digit since Unicode 16 (the standard library knows Unicode 14)
)
QUOTED = (
    "'St. Louis'",
    '"e.g. x"',
    "'a. b'",
    '"Dr."',
    "'1.'",
    '""',
    "'Inc. The'",
    "'x'",
)
SEPARATORS = (
    " ",
    " ",
    " ",
    " ",
    "",
    "  ",
    "\n",
    "\t",
    " \n ",
    "\r\n",
    "\n\n",
    "\xa0",
    "\x1c",
    "\x1f",
)


def generated_text(rng: random.Random) -> str:
    """A string of SQL-like fragments with periods where Punkt decides."""
    parts = []
    for _ in range(rng.randint(2, 14)):
        kind = rng.random()
        if kind < 0.4:
            parts.append(rng.choice(PERIOD_WORDS))
        elif kind < 0.75:
            parts.append(rng.choice(WORDS))
        elif kind < 0.9:
            parts.append(rng.choice(PUNCTUATION))
        else:
            parts.append(rng.choice(QUOTED))
        parts.append(rng.choice(SEPARATORS))
    return "".join(parts)


SOUP = "aAbBsStTxX19 .....??!!))((,,;:\n\t\"'`-_\u201c\u00bb\x1c\u00b2\u0301" + "cannot" * 2


def character_soup(rng: random.Random) -> str:
    """Characters drawn one by one from those Punkt's expressions name."""
    return "".join(rng.choice(SOUP) for _ in range(rng.randint(1, 40)))


def with_periods(sql: str, rng: random.Random) -> str:
    """A real query with periods and abbreviations put after some of its words."""
    words = sql.split(" ")
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(words))
        words[at] += rng.choice((".", ". ", ".\n", " " + rng.choice(PERIOD_WORDS)))
    return " ".join(words)


def texts(generated: int, seed: int, predictions: list[Path]) -> list[str]:
    rng = random.Random(seed)
    pairs = build_pairs(3, seed, predictions)
    real = list(dict.fromkeys([p["gold"] for p in pairs] + [p["pred"] for p in pairs]))
    made = [generated_text(rng) for _ in range(generated // 3)]
    made += [character_soup(rng) for _ in range(generated // 3)]
    made += [with_periods(rng.choice(real), rng) for _ in range(generated - len(made))]
    return list(dict.fromkeys(real + made))


def ours(text: str) -> object:
    try:
        return tokenize_sql(text)
    except SqlTokenError as exc:
        return {"error": str(exc)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--official-test-suite", type=Path, required=True)
    parser.add_argument("--official-python", default=sys.executable)
    parser.add_argument("--generated", type=int, default=40000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--predictions", type=Path, nargs="*", default=[])
    args = parser.parse_args()
    items = texts(args.generated, args.seed, args.predictions)
    driver = Path(__file__).with_name("spider1_tokens_official.py")
    done = subprocess.run(
        [args.official_python, str(driver), str(args.official_test_suite)],
        input="".join(json.dumps(t) + "\n" for t in items),
        capture_output=True,
        text=True,
        check=True,
    )
    official = [json.loads(line) for line in done.stdout.splitlines()]
    differences = 0
    for text, expected in zip(items, official, strict=True):
        got = ours(text)
        if got != expected:
            differences += 1
            print(f"{text!r}\n    official {expected}\n    ours     {got}")
    print(f"texts: {len(items)}; tokens differ on {differences}")


if __name__ == "__main__":
    main()
