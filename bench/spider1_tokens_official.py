"""Run the official Spider 1.0 tokenizer on texts, one JSON list of tokens per line.

Run by `bench.bench_em_tokens` under a Python that has nltk and nltk's punkt data, with the
official test-suite-sql-eval checkout on `sys.path`: each text goes through the official
`process_sql.tokenize` (quotes hidden, `nltk.word_tokenize`, `!=` `>=` `<=` joined).

    OFFICIAL_PY bench/spider1_tokens_official.py CHECKOUT < texts.jsonl
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    sys.path.insert(0, sys.argv[1])
    from process_sql import tokenize  # the official module

    for line in sys.stdin:
        try:
            out: object = tokenize(json.loads(line))
        except AssertionError as exc:  # the official "Unexpected quote"
            out = {"error": str(exc)}
        print(json.dumps(out))


if __name__ == "__main__":
    main()
