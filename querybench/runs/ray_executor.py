"""`--executor ray`: a run's instances solved on a Ray cluster instead of in this process.

The driver (the process running `querybench`) stays the only writer. It selects the tasks,
sends each to a solver actor, appends the record each one returns to the run's store and then
scores the predictions exactly as the local executor does, so the run folder, the resume rules
and the results are the same whichever executor ran. Clients and engines do not travel: each
actor builds the method and the model from the run's config where it runs.

The caps keep their meaning across the cluster because only the driver submits work:
`workers` instances of one engine kind in progress at most (`capped`), while the `concurrency`
HTTP slots and the `max_requests` budget are divided among the actors.
"""

from __future__ import annotations

import os
import re
import socket
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace
from types import ModuleType
from typing import Any, TypeVar

from querybench.errors import BudgetExhausted, QuerybenchError, RayUnavailable
from querybench.methods import get_method
from querybench.runs.config import RunConfig
from querybench.runs.solve import build_model, method_settings, solve_instance
from querybench.runs.store import InstanceRecord
from querybench.tasks.model import Task

EXECUTORS = ("local", "ray")
INSTALL = "pip install 'querybench[ray]'"
# What workers read from the environment; a local Ray started here inherits it anyway, a
# cluster's workers get the driver's values.
FORWARDED_ENV = ("QUERYBENCH_DATA", "QUERYBENCH_CACHE", "OPENAI_BASE_URL")

T = TypeVar("T")


def require_ray() -> ModuleType:
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable(
            f"--executor ray needs Ray, which is not installed here: {INSTALL}"
        ) from exc
    return ray


# What Ray's `init` reads as a cluster: `host:port` (its GCS), `ray://host[:port]` (a Ray
# client server); a host a name, an IPv4 or a bracketed IPv6 address.
_HOST = r"(?:[\w.-]+|\[[0-9A-Fa-f:.]+\])"
_ADDRESS = re.compile(rf"ray://{_HOST}(?::\d+)?|{_HOST}:\d+")


def check_executor(executor: str, address: str | None = None) -> None:
    """An unknown executor or a malformed `address` is refused before anything runs (Ray's
    own refusal is a traceback); `ray` without Ray installed says how to install it."""
    if executor not in EXECUTORS:
        raise QuerybenchError(f"--executor must be local or ray, not {executor!r}")
    if address is not None and executor != "ray":
        raise QuerybenchError("--address needs --executor ray (it names the Ray cluster to join)")
    if address is not None and address not in ("auto", "local") and not _ADDRESS.fullmatch(address):
        raise QuerybenchError(
            f"--address must be auto, host:port or ray://host:port, not {address!r}"
        )
    if executor == "ray":
        require_ray()


@contextmanager
def ray_session(address: str | None) -> Iterator[ModuleType]:
    """Ray connected to `address` (`auto`, `ray://host:10001`), or a local Ray started here
    without one and shut down after. An already initialised Ray (a test's) is used as is."""
    check_executor("ray", address)
    ray = require_ray()
    started = not ray.is_initialized()
    if started and address:
        _check_reachable(address)
        try:
            ray.init(address=address, log_to_driver=False)
        except (ConnectionError, RuntimeError) as exc:
            raise QuerybenchError(
                f"cannot join the Ray cluster at {address} ({exc}); is it running (`ray status`)"
                ", and does this machine have its auth token where Ray looks for one?"
            ) from exc
    elif started:
        ray.init(address="local", include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def _check_reachable(address: str) -> None:
    """Fail in seconds on a `host:port` nobody listens on (Ray itself retries for minutes)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # `auto` and the like: Ray finds the cluster itself
    try:
        socket.create_connection((host, int(port)), timeout=10).close()
    except OSError as exc:
        raise QuerybenchError(f"no Ray cluster answers at {address} ({exc})") from exc


def worker_options() -> dict[str, Any]:
    env = {k: os.environ[k] for k in FORWARDED_ENV if k in os.environ}
    return {"num_cpus": 1, "runtime_env": {"env_vars": env}} if env else {"num_cpus": 1}


def capped(
    items: Iterable[T],
    kind: Callable[[T], str],
    cap: int,
    submit: Callable[[T], Any],
    stop: Callable[[], bool] = lambda: False,
) -> Iterator[tuple[T, Any]]:
    """Submit `items` (each kind in its order) with at most `cap` of one kind in flight; yield
    (item, value) as each finishes. Once `stop()` is true nothing more is submitted; leaving
    early cancels whatever is still in flight."""
    ray = require_ray()
    waiting: dict[str, deque[T]] = {}  # by kind, each in input order
    for item in items:
        waiting.setdefault(kind(item), deque()).append(item)
    in_flight: dict[Any, T] = {}
    busy: Counter[str] = Counter()
    try:
        while True:
            if stop():
                waiting.clear()
            for k, queue in waiting.items():
                while queue and busy[k] < cap:
                    busy[k] += 1
                    item = queue.popleft()
                    in_flight[submit(item)] = item
            if not in_flight:
                return
            [ready], _ = ray.wait(list(in_flight), num_returns=1)
            item = in_flight.pop(ready)
            busy[kind(item)] -= 1
            yield item, ray.get(ready)
    finally:
        for ref in in_flight:
            ray.cancel(ref)


class Solver:
    """One actor's method and model, built from the run's config on the node it runs on."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.method = get_method(config.method)
        self.model = build_model(config)
        self.settings = method_settings(config)

    async def solve(self, task: Task) -> InstanceRecord | str:
        """The task's record, or why the request budget stopped it (it stays unfinished)."""
        try:
            return await solve_instance(self.config, self.method, self.model, self.settings, task)
        except BudgetExhausted as exc:
            return str(exc)

    async def close(self) -> None:
        await self.model.aclose()


def solve_on_ray(
    config: RunConfig, todo: list[Task], on_finished: Callable[[InstanceRecord], None]
) -> str | None:
    """Solve `todo` on the cluster, `on_finished(record)` on the driver as each comes back;
    returns why the run stopped early (a spent request budget), if it did."""
    if not todo:
        return None
    with ray_session(config.execution.address) as ray:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        limits = [
            config.execution.workers,
            config.execution.concurrency,
            cpus,
            len(todo),
            config.execution.max_requests,
        ]
        n = max(1, min(x for x in limits if x is not None))
        execution = config.execution
        budget = execution.max_requests
        share = replace(
            config,
            execution=replace(
                execution,
                concurrency=execution.concurrency // n,
                max_requests=None if budget is None else budget // n,
            ),
        )
        solver = ray.remote(Solver).options(scheduling_strategy="SPREAD", **worker_options())
        actors = [solver.remote(share) for _ in range(n)]
        load = [0] * n
        owner: dict[str, int] = {}

        def submit(task: Task) -> Any:
            i = load.index(min(load))
            load[i] += 1
            owner[task.instance_id] = i
            return actors[i].solve.remote(task)

        stopped: list[str] = []
        try:
            for task, value in capped(
                todo,
                lambda t: str(t.engine),
                config.execution.workers,
                submit,
                lambda: bool(stopped),
            ):
                load[owner.pop(task.instance_id)] -= 1
                if isinstance(value, str):
                    stopped.append(value)
                else:
                    on_finished(value)
        finally:
            with suppress(Exception):  # closing is best effort: the actors are killed next
                ray.get([a.close.remote() for a in actors], timeout=30)
            for actor in actors:
                ray.kill(actor)
    return stopped[0] if stopped else None
