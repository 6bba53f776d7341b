"""pandas 2.2's float parse (`precise_xstrtod`), of one token and of a column's tokens at once.

A Spider 2.0 result column of floats printed at full precision has hundreds of thousands of
17-digit tokens, each of which pandas 2.2 reads otherwise than a correctly rounded parser; one
at a time in Python that is most of the cost of parsing such a file. Tokens of the plain shape
(an optional sign, digits with at most one point, an optional exponent of at most three digits,
nothing else) are read here by the very same steps on float64 arrays: the first 15 digits as
one exact integer, the 16th and 17th each by a multiplication and an addition, then one
multiplication or division by a power of ten. NumPy's float64 operations are IEEE 754's, as
Python's are, so each value is bit for bit the scalar parse's. Any other token, and any whose
scale falls outside 10**±308 or whose value overflows, is left to the scalar parse.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

_POW10 = np.array([float(f"1e{k}") for k in range(309)])
_INT_POW10 = np.array([10**k for k in range(16)], dtype=np.int64)
_DIGITS_TAKEN = 17  # pandas 2.2 gathers this many digits, leading zeros included
_EXACT_DIGITS = 15  # gathered at once: below 2**53, so exact
_MAX_POWER_DIGITS = 3
_FLOAT_TOKEN = re.compile(
    r"[ \t\n\v\f\r]*([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?[ \t\n\v\f\r]*"
)
_SCALAR_POW10 = [float(f"1e{k}") for k in range(309)]  # Python floats, for the scalar parse
# The longest token read by `plain_floats`' character matrices (n x the longest token, in
# int64): a longer one, as rare as it is (a cell of a million digits among 300 made that
# matrix 23 GB), is read by the scalar parse.
_MATRIX_CHARS = 64
_FIND_POINT = operator.methodcaller("find", ".")


def plain_floats(tokens: Sequence[str]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """The values of `tokens` as `precise_xstrtod` gives them, and which of them were read
    here (the others' values are unspecified: the caller parses them one at a time)."""
    n = len(tokens)
    values = np.zeros(n)
    if n == 0:
        return values, np.zeros(0, dtype=bool)
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=n)
    if (
        lengths.max() > _MATRIX_CHARS
    ):  # those left to the scalar parse: the matrix is n x the longest
        plain = np.zeros(n, dtype=bool)
        kept = np.flatnonzero(lengths <= _MATRIX_CHARS)
        values[kept], plain[kept] = plain_floats([tokens[i] for i in kept.tolist()])
        return values, plain
    text = np.array(tokens, dtype=np.str_)
    width = text.dtype.itemsize // 4
    if width == 0:
        return values, np.zeros(n, dtype=bool)
    chars = text.view(np.uint32).reshape(n, width).astype(np.int64)
    cols = np.arange(width)[None, :]
    # NumPy drops trailing NULs: a token longer than its stored text is never plain
    inside = cols < np.minimum(lengths, width)[:, None]
    digit = (chars >= 48) & (chars <= 57) & inside
    dot = (chars == 46) & inside
    exp_mark = ((chars == 101) | (chars == 69)) & inside
    sign = ((chars == 43) | (chars == 45)) & inside
    has_exp = exp_mark.any(axis=1)
    exp_at = np.where(has_exp, exp_mark.argmax(axis=1), lengths)[:, None]
    lead = sign[:, :1]
    mantissa = (cols >= lead) & (cols < exp_at)
    power_sign = sign & (cols == exp_at + 1)
    power = inside & (cols > exp_at) & ~power_sign
    allowed = (
        (mantissa & (digit | dot))
        | (power & digit)
        | power_sign
        | (lead & (cols == 0))
        | (exp_mark & (cols == exp_at))
    )
    mantissa_digit = digit & mantissa
    power_digit = digit & power
    count = mantissa_digit.sum(axis=1)
    power_count = power_digit.sum(axis=1)
    plain = (
        (lengths <= width)
        & (allowed | ~inside).all(axis=1)
        & ((dot & mantissa).sum(axis=1) <= 1)
        & (count >= 1)
        & np.where(has_exp, (power_count >= 1) & (power_count <= _MAX_POWER_DIGITS), True)
    )
    value = np.where(digit, chars - 48, 0)
    rank = np.cumsum(mantissa_digit, axis=1)  # 1 for the first digit, 2 for the second, ...
    # the first 15 digits as an integer, then rescaled to as many as there are
    head = rank <= _EXACT_DIGITS
    weight = _INT_POW10[np.clip(_EXACT_DIGITS - rank, 0, _EXACT_DIGITS)]
    first = np.where(mantissa_digit & head, value * weight, 0).sum(axis=1)
    first //= _INT_POW10[_EXACT_DIGITS - np.minimum(count, _EXACT_DIGITS)]
    number = first.astype(np.float64)
    for k in range(_EXACT_DIGITS + 1, _DIGITS_TAKEN + 1):
        digit_k = np.where(mantissa_digit & (rank == k), value, 0).sum(axis=1)
        number = np.where(count >= k, number * 10.0 + digit_k, number)
    number = np.where(lead[:, 0] & (chars[:, 0] == 45), -number, number)
    dot_at = np.where((dot & mantissa).any(axis=1), (dot & mantissa).argmax(axis=1), exp_at[:, 0])
    whole = (mantissa_digit & (cols < dot_at[:, None])).sum(axis=1)
    fraction = count - whole
    power_rank = np.cumsum(power_digit, axis=1)
    power_weight = _INT_POW10[np.clip(power_count[:, None] - power_rank, 0, _EXACT_DIGITS)]
    power_value = np.where(power_digit, value * power_weight, 0).sum(axis=1)
    negative_power = (power_sign & (chars == 45)).any(axis=1)
    exponent = np.maximum(0, whole - _DIGITS_TAKEN) - np.maximum(
        0, np.minimum(fraction, _DIGITS_TAKEN - whole)
    )
    exponent += np.where(negative_power, -power_value, power_value)
    plain &= (exponent >= -308) & (exponent <= 308)
    scale = _POW10[np.clip(np.abs(exponent), 0, 308)]
    with np.errstate(over="ignore"):
        values = np.where(exponent > 0, number * scale, number / scale)
    plain &= np.isfinite(values)
    return values, plain


def decimal_floats(tokens: Sequence[str]) -> npt.NDArray[np.float64]:
    """`precise_xstrtod` of tokens that are each a plain decimal without exponent
    (`-?(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)`, at most 308 digits before the point), bit for bit,
    in a quarter of `plain_floats`' time: the same steps, on one byte per character, each of
    the first 17 digits taken by its position (the sign and the point skipped) rather than
    through matrices of every character."""
    n = len(tokens)
    if n == 0:
        return np.zeros(0)
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=n)
    found = np.fromiter(map(_FIND_POINT, tokens), dtype=np.int64, count=n)
    has_dot = found >= 0
    dot_at = np.where(has_dot, found, lengths)
    # only a sign, the first 17 digits and a point among them are read: a token's first
    # characters (a column holding one cell of a million digits is not a matrix of them)
    prefix = _DIGITS_TAKEN + 2
    clipped = tokens if lengths.max() <= prefix else [t[:prefix] for t in tokens]
    text = np.array(clipped, dtype=np.bytes_)  # ASCII by their shape
    width = text.dtype.itemsize
    chars = text.view(np.uint8).reshape(n, width)
    negative = chars[:, 0] == 45
    lead = negative.astype(np.int64)
    whole = dot_at - lead
    fraction = np.where(has_dot, lengths - dot_at - 1, 0)
    count = whole + fraction
    # the first 17 digits, each found by its place: the sign and the point skipped
    at = lead[:, None] + np.arange(_DIGITS_TAKEN)[None, :]
    at += has_dot[:, None] & (at >= dot_at[:, None])
    taken = np.arange(_DIGITS_TAKEN)[None, :] < count[:, None]
    digits = np.where(taken, chars[np.arange(n)[:, None], np.minimum(at, width - 1)] - 48, 0)
    digits = digits.astype(np.int64)
    # the first 15 as one exact integer (those past the count are 0: it is a multiple of
    # the power of ten they stand for), then the 16th and 17th a step each, in floats
    first = digits[:, :_EXACT_DIGITS] @ _INT_POW10[_EXACT_DIGITS - 1 :: -1]
    first //= _INT_POW10[_EXACT_DIGITS - np.minimum(count, _EXACT_DIGITS)]
    number = first.astype(np.float64)
    for k in range(_EXACT_DIGITS, _DIGITS_TAKEN):
        number = np.where(count > k, number * 10.0 + digits[:, k], number)
    number = np.where(negative, -number, number)
    exponent = np.maximum(0, whole - _DIGITS_TAKEN) - np.maximum(
        0, np.minimum(fraction, _DIGITS_TAKEN - whole)
    )
    scale = _POW10[np.clip(np.abs(exponent), 0, 308)]
    values: npt.NDArray[np.float64] = np.where(exponent > 0, number * scale, number / scale)
    return values


def precise_xstrtod(token: str) -> float | None:
    """pandas 2.2's default float parse (`precise_xstrtod` in its tokenizer, float_precision
    "high"): the first 17 digits (leading zeros count) gathered in a double one at a time, then
    scaled by one power of ten. None where it reports an error (no digits, other text, beyond
    the double range)."""
    match = _FLOAT_TOKEN.fullmatch(token)
    if match is None:
        return None
    sign, whole, fraction, power = match.groups()
    digits = whole + (fraction or "")
    if not digits or (power is not None and len(power.lstrip("+-")) > 17):
        return None
    taken = digits[:17]
    exponent = max(0, len(whole) - 17) - max(0, min(len(fraction or ""), 17 - len(whole)))
    exponent += int(power) if power is not None else 0
    # Exact while below 2**53: the first 15 digits at once, the last two rounded step by step.
    number = float(int(taken[:15]))
    for digit in taken[15:]:
        number = number * 10.0 + (ord(digit) - 48)
    if sign == "-":
        number = -number
    if exponent > 308:
        return None
    if exponent > 0:
        number *= _SCALAR_POW10[exponent]
    elif exponent < -616:
        number = 0.0
    elif exponent < -308:
        number = number / _SCALAR_POW10[-308 - exponent] / _SCALAR_POW10[308]
    else:
        number /= _SCALAR_POW10[-exponent]
    return None if number in (math.inf, -math.inf) else number
