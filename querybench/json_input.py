"""JSON read from a file or a reply that nobody vouches for, decoded in one way.

`json.loads` raises `RecursionError`, not a `ValueError`, on an array or object nested past
the interpreter's recursion limit (`[` repeated 100,000 times is a 200 kB file), and a plain
`ValueError` on an integer past the interpreter's digit limit (4,300 digits). Every caller
that expects malformed JSON to be a `json.JSONDecodeError` would then let a traceback through
(a predictions file, a trajectory, a config, a tool call's arguments). `loads` and
`raw_decode` make both one more malformed input: a `json.JSONDecodeError` (a `ValueError`),
which each reader already turns into its own stated error.
"""

from __future__ import annotations

import json
from typing import Any

NESTED = "nested past the reader"
LONG_NUMBER = "a number longer than the reader takes"


_DECODER = json.JSONDecoder()


def loads(text: str | bytes | bytearray) -> Any:
    """`json.loads`, with nesting past the recursion limit a `json.JSONDecodeError`."""
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError(NESTED, text if isinstance(text, str) else "", 0) from None
    except (json.JSONDecodeError, UnicodeError):  # bytes not UTF-8: the callers' own case
        raise
    except ValueError as exc:  # an integer past `sys.get_int_max_str_digits()`
        doc = text if isinstance(text, str) else ""
        raise json.JSONDecodeError(f"{LONG_NUMBER} ({exc})", doc, 0) from None


def raw_decode(text: str, index: int) -> tuple[Any, int]:
    """`JSONDecoder.raw_decode` (one value from `index`, and where it ends), the same way."""
    try:
        return _DECODER.raw_decode(text, index)
    except RecursionError:
        raise json.JSONDecodeError(NESTED, text, index) from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        raise json.JSONDecodeError(f"{LONG_NUMBER} ({exc})", text, index) from None
