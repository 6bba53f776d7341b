"""Concurrent `ascore` calls on one event loop gathered into batches for the worker processes.

One process hand-off costs about 0.5 ms, more than a Spider answer takes to run, so one call
per reward is slower on processes than on threads. Calls made in the same event-loop pass go
out as one batch (a full one as soon as it is full), and while every worker is busy new calls
wait and leave together when a batch comes back: an idle reward adds no delay, a busy one sends
few, full batches.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable
from concurrent.futures import Future

from querybench.envs.match import RewardOutcome
from querybench.envs.repeats import copy_outcome, shareable
from querybench.envs.reward_child import WorkItem
from querybench.envs.reward_workers import let_workers_run

# Scores a batch in the worker processes; the future never fails (a crash scores 0 instead).
Submit = Callable[[list[WorkItem]], "Future[list[RewardOutcome]]"]
# An item and the calls waiting for it: one, or the repeats that joined it.
_Waiting = tuple[WorkItem, "list[asyncio.Future[RewardOutcome]]"]


class Coalescer:
    """The batching of one event loop: at most `in_flight` batches of `batch_size` out."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, submit: Submit, in_flight: int, batch_size: int
    ) -> None:
        self.loop, self.submit = loop, submit
        self.in_flight_limit, self.batch_size = max(1, in_flight), max(1, batch_size)
        self.waiting: list[_Waiting] = []
        # The callers of each shareable item still waiting or in flight (the same list).
        self.shared: dict[WorkItem, list[asyncio.Future[RewardOutcome]]] = {}
        self.in_flight = 0
        self.scheduled = False

    def score(self, item: WorkItem) -> asyncio.Future[RewardOutcome]:
        """The outcome of `item`, sent with the other calls of this loop pass; a call repeating
        one still waiting or in flight joins it and gets a copy of its outcome (`repeats.py`)."""
        future: asyncio.Future[RewardOutcome] = self.loop.create_future()
        callers = self.shared.get(item)
        if callers is not None:
            callers.append(future)
            return future
        callers = [future]
        if shareable(item):
            self.shared[item] = callers
        self.waiting.append((item, callers))
        if len(self.waiting) >= self.batch_size and self.in_flight < self.in_flight_limit:
            # A full batch goes now rather than at the end of this loop pass: a burst of calls
            # (a trainer starting its rollouts) keeps the workers busy while it is still made.
            self._send(self.batch_size)
        elif not self.scheduled:
            self.scheduled = True
            self.loop.call_soon(self._flush)
        return future

    def _flush(self) -> None:
        self.scheduled = False
        while self.waiting and self.in_flight < self.in_flight_limit:
            # Spread what waits over the free workers, so a few calls still use them all.
            free = self.in_flight_limit - self.in_flight
            self._send(min(self.batch_size, math.ceil(len(self.waiting) / free)))

    def _send(self, size: int) -> None:
        batch, self.waiting = self._live(self.waiting[:size]), self.waiting[size:]
        if not batch:
            return
        self.in_flight += 1
        self.submit([item for item, _ in batch]).add_done_callback(
            lambda done, batch=batch: self._back(batch, done)  # type: ignore[misc]
        )
        let_workers_run()  # this loop runs on: the batch leaves now, not in up to 5 ms

    def _live(self, batch: list[_Waiting]) -> list[_Waiting]:
        """`batch` without the items every caller of which was cancelled while it waited."""
        live = []
        for entry in batch:
            item, callers = entry
            if callers[0].cancelled() and all(future.cancelled() for future in callers):
                if self.shared.get(item) is callers:
                    del self.shared[item]
            else:
                live.append(entry)
        return live

    def _back(self, batch: list[_Waiting], done: Future[list[RewardOutcome]]) -> None:
        # Called on the pool's thread: hand the outcomes to the loop (unless it has closed,
        # when nobody awaits them any more).
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self._finish, batch, done)

    def _finish(self, batch: list[_Waiting], done: Future[list[RewardOutcome]]) -> None:
        self.in_flight -= 1
        shared = self.shared
        for (item, callers), outcome in zip(batch, done.result(), strict=True):
            if shared.get(item) is callers:
                del shared[item]
            given = False
            for future in callers:
                if not future.done():  # a caller cancelled meanwhile is skipped
                    future.set_result(copy_outcome(outcome) if given else outcome)
                    given = True
        self._flush()
