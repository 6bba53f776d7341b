"""Context overflow: cut the history from its beginning until the prompt fits the window.

System messages and the last message's question (`content`) are never cut. Whole messages
between them go first, oldest first; then the `context` part of messages (schema, documents),
from its beginning, oldest message first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from querybench.context.tokens import count_tokens
from querybench.models.base import Message, Truncation

_PER_MESSAGE = 4  # role and separators, counted generously


def prompt_tokens(messages: tuple[Message, ...], count: Callable[[str], int] = count_tokens) -> int:
    return sum(_message_tokens(m, count) for m in messages)


def _message_tokens(message: Message, count: Callable[[str], int]) -> int:
    return count(message.text) + _PER_MESSAGE


def fit_messages(
    messages: tuple[Message, ...],
    limit: int,
    count: Callable[[str], int] = count_tokens,
) -> tuple[tuple[Message, ...], Truncation | None]:
    """`messages` within `limit` prompt tokens, and what was cut (None when nothing was)."""
    # Each message is counted once and its count kept beside it, so cutting a long history
    # does not recount every message at every step.
    sizes = [_message_tokens(m, count) for m in messages]
    before = sum(sizes)
    if before <= limit:
        return messages, None
    kept = list(messages)
    last = len(kept) - 1
    dropped = 0
    i = 0
    while sum(sizes) > limit and i < last:
        if kept[i].role != "system":
            # a tool call goes with its answers: an answer without its call is refused
            span = 1
            while i + span < last and kept[i + span].role == "tool":
                span += 1
            del kept[i : i + span]
            del sizes[i : i + span]
            last -= span
            dropped += span
        else:
            i += 1
    cut = 0
    for j, message in enumerate(kept):
        excess = sum(sizes) - limit
        if excess <= 0:
            break
        if message.role == "system" or not message.context:
            continue
        new_context, removed = _cut_head(message.context, excess, count)
        kept[j] = replace(message, context=new_context)
        sizes[j] = _message_tokens(kept[j], count)
        cut += removed
    return tuple(kept), Truncation(dropped, cut, before, sum(sizes))


def _cut_head(text: str, excess: int, count: Callable[[str], int]) -> tuple[str, int]:
    """Drop lines from the beginning of `text` until `excess` tokens are gone (or all are)."""
    total = count(text)
    lines = text.split("\n")
    removed = 0
    start = 0
    while start < len(lines) and removed < excess:
        removed += count(lines[start]) + 1
        start += 1
    rest = "\n".join(lines[start:])
    return rest, total - count(rest) if rest else total
