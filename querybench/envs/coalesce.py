"""Concurrent `ascore` calls on one event loop gathered into batches for the worker processes.

One process hand-off costs about 0.5 ms, more than a Spider answer takes to run, so one call
per reward is slower on processes than on threads. Calls made in the same event-loop pass go
out as one batch, and while every worker is busy new calls wait and leave together when a batch
comes back: an idle reward adds no delay, a busy one sends few, full batches.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
from collections.abc import Callable
from concurrent.futures import Future

from querybench.envs.match import RewardOutcome
from querybench.envs.repeats import copy_outcome, shareable
from querybench.envs.reward_child import WorkItem

# Scores a batch in the worker processes; the future never fails (a crash scores 0 instead).
Submit = Callable[[list[WorkItem]], "Future[list[RewardOutcome]]"]
_Waiting = tuple[WorkItem, "asyncio.Future[RewardOutcome]"]


class Coalescer:
    """The batching of one event loop: at most `in_flight` batches of `batch_size` out."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, submit: Submit, in_flight: int, batch_size: int
    ) -> None:
        self.loop, self.submit = loop, submit
        self.in_flight_limit, self.batch_size = max(1, in_flight), max(1, batch_size)
        self.waiting: list[_Waiting] = []
        # The first call of each shareable item still waiting or in flight.
        self.pending: dict[WorkItem, asyncio.Future[RewardOutcome]] = {}
        self.in_flight = 0
        self.scheduled = False

    def score(self, item: WorkItem) -> asyncio.Future[RewardOutcome]:
        """The outcome of `item`, sent with the other calls of this loop pass; a call repeating
        one still waiting or in flight takes a copy of its outcome instead (`repeats.py`)."""
        future: asyncio.Future[RewardOutcome] = self.loop.create_future()
        self._enqueue(item, future)
        return future

    def _enqueue(self, item: WorkItem, future: asyncio.Future[RewardOutcome]) -> None:
        first = self.pending.get(item)
        if first is not None:
            first.add_done_callback(functools.partial(self._copy, item, future))
            return
        if shareable(item):
            self.pending[item] = future
            future.add_done_callback(functools.partial(self._forget, item))
        self.waiting.append((item, future))
        if not self.scheduled:
            self.scheduled = True
            self.loop.call_soon(self._flush)

    def _forget(self, item: WorkItem, future: asyncio.Future[RewardOutcome]) -> None:
        if self.pending.get(item) is future:
            del self.pending[item]

    def _copy(
        self,
        item: WorkItem,
        future: asyncio.Future[RewardOutcome],
        first: asyncio.Future[RewardOutcome],
    ) -> None:
        if future.done():  # this caller was cancelled
            return
        if first.cancelled():  # the first caller gave up: this one is scored in its place
            self._enqueue(item, future)
        else:
            future.set_result(copy_outcome(first.result()))

    def _flush(self) -> None:
        self.scheduled = False
        self.waiting = [w for w in self.waiting if not w[1].cancelled()]
        while self.waiting and self.in_flight < self.in_flight_limit:
            # Spread what waits over the free workers, so a few calls still use them all.
            free = self.in_flight_limit - self.in_flight
            size = min(self.batch_size, math.ceil(len(self.waiting) / free))
            batch, self.waiting = self.waiting[:size], self.waiting[size:]
            self.in_flight += 1
            self.submit([item for item, _ in batch]).add_done_callback(
                lambda done, batch=batch: self._back(batch, done)  # type: ignore[misc]
            )

    def _back(self, batch: list[_Waiting], done: Future[list[RewardOutcome]]) -> None:
        # Called on the pool's thread: hand the outcomes to the loop (unless it has closed,
        # when nobody awaits them any more).
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self._finish, batch, done)

    def _finish(self, batch: list[_Waiting], done: Future[list[RewardOutcome]]) -> None:
        self.in_flight -= 1
        for (_, future), outcome in zip(batch, done.result(), strict=True):
            if not future.done():
                future.set_result(outcome)
        self._flush()
