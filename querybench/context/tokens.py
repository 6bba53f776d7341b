"""Token counts in the o200k_base encoding, offline: `bpe-openai` ships its tables (tiktoken
would download them at first use)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

ENCODING = "o200k_base"


@lru_cache(maxsize=1)
def _encoding() -> Any:
    import bpe_openai

    return bpe_openai.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    if not text:
        return 0
    return len(_encoding().encode_ordinary(text))
