"""One task to one record: the method's answer (majority vote over several candidates) or the
error that stopped it, the same for the local executor (`runner.py`) and Ray's
(`ray_executor.py`)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

from querybench.engines.pool import run_one
from querybench.errors import (
    BudgetExhausted,
    EngineUnavailable,
    ErrorCode,
    ModelError,
    QuerybenchError,
)
from querybench.evaluation.sampling import majority_vote, result_key
from querybench.methods import Method, MethodOutput, MethodSettings
from querybench.models import ChatModel, PriceTable, RetryPolicy, Sampling, make_model
from querybench.runs.config import RunConfig
from querybench.runs.store import InstanceRecord, RecordStatus
from querybench.tasks.databases import task_database
from querybench.tasks.model import Task


def build_model(config: RunConfig) -> ChatModel:
    endpoint = config.endpoint
    prices = PriceTable.from_file(endpoint.prices_file) if endpoint.prices_file else None
    return make_model(
        config.model,
        base_url=endpoint.base_url,
        api_key_env=endpoint.api_key_env,
        constant_sql=endpoint.constant_sql,
        timeout=endpoint.timeout,
        retry=RetryPolicy(max_retries=endpoint.max_retries),
        concurrency=config.execution.concurrency,
        max_requests=config.execution.max_requests,
        cache_dir=config.cache.cache_dir,
        use_cache=config.cache.use_cache,
        prices=prices,
        context_window=config.prompt.context_window,
    )


def method_settings(config: RunConfig) -> MethodSettings:
    sampling = config.sampling
    return MethodSettings(
        sampling=Sampling(
            sampling.temperature, sampling.top_p, sampling.max_tokens, sampling.seed, sampling.stop
        ),
        n=sampling.n,
        context_budget=config.prompt.context_budget,
        data_dir=config.selection.data_dir,
        examples=config.prompt.examples,
        run_dir=config.out,
        options=config.options,
    )


async def solve_instance(
    config: RunConfig, method: Method, model: ChatModel, settings: MethodSettings, task: Task
) -> InstanceRecord:
    """One task to one record; every failure but a spent budget becomes the record's error."""
    start = time.perf_counter()
    try:
        output = await method.solve(task, model, settings)
    except BudgetExhausted:
        raise
    except ModelError as exc:
        return _failed(task, exc.code, str(exc), start, transient=exc.transient)
    except EngineUnavailable as exc:  # e.g. an agent task whose database is not here
        return _failed(task, ErrorCode.ENGINE_UNAVAILABLE, str(exc), start)
    except QuerybenchError as exc:
        return _failed(task, ErrorCode.CONTEXT_ERROR, str(exc), start)
    except Exception as exc:  # a bug on one task must not end the run
        return _failed(task, ErrorCode.METHOD_ERROR, f"{type(exc).__name__}: {exc}", start)
    chosen, votes = await _choose(config, task, output)
    record = _record(task, output, chosen, votes, start)
    no_answer = output.extra.get("no_answer")
    if isinstance(no_answer, str):  # an agent a rule stopped before it answered
        return replace(
            record, status=RecordStatus.ERROR, error=ErrorCode.MISSING_PREDICTION, message=no_answer
        )
    return record


def _failed(
    task: Task, code: ErrorCode, message: str, start: float, transient: bool = False
) -> InstanceRecord:
    elapsed = time.perf_counter() - start
    return InstanceRecord(
        task.instance_id, RecordStatus.ERROR, code, message, total_s=elapsed, transient=transient
    )


async def _choose(
    config: RunConfig, task: Task, output: MethodOutput
) -> tuple[int, list[Any] | None]:
    """With one candidate, it; with several, majority vote by execution result on the task's
    database (the first candidate when the database is not reachable here)."""
    sqls = [c.sql for c in output.candidates]
    if len(sqls) < 2:
        return 0, None
    database = task_database(task, config.selection.data_dir)
    if database is None:
        return 0, None

    def key_of(sql: str | None) -> tuple[Any, ...] | None:
        if sql is None:
            return None
        outcome = run_one(database, sql, timeout=config.scoring.eval_timeout)
        if outcome.result is None:
            return None
        return result_key(len(outcome.result.columns), outcome.result.rows)

    keys = await asyncio.to_thread(lambda: [key_of(s) for s in sqls])
    winner = majority_vote(keys)
    groups = {k: i for i, k in enumerate(keys) if k is not None}
    votes = [None if k is None else list(groups).index(k) for k in keys]
    return (winner if winner is not None else 0), votes


def _record(
    task: Task, output: MethodOutput, chosen: int, votes: list[Any] | None, start: float
) -> InstanceRecord:
    completions = [c.completion for c in output.candidates]
    truncations = [c.truncation for c in completions if c.truncation is not None]
    extra: dict[str, Any] = dict(output.extra)
    if votes is not None:
        extra["result_groups"] = votes
        extra["chosen"] = chosen
    return InstanceRecord(
        instance_id=task.instance_id,
        status=RecordStatus.OK,
        prompt_hash=output.prompt_hash,
        replies=tuple(c.reply for c in output.candidates),
        sqls=tuple(c.sql for c in output.candidates),
        sql=output.candidates[chosen].sql if output.candidates else None,
        prompt_tokens=sum(c.usage.prompt_tokens for c in completions),
        completion_tokens=sum(c.usage.completion_tokens for c in completions),
        cost=sum(c.cost for c in completions),
        context_s=output.context_s,
        model_s=max((c.latency_s for c in completions), default=0.0),
        total_s=time.perf_counter() - start,
        attempts=sum(c.attempts for c in completions),
        cached=sum(c.cached for c in completions),
        retried_for=tuple(r for c in completions for r in c.retried_for),
        truncation=(
            {
                "dropped_messages": truncations[0].dropped_messages,
                "cut_tokens": truncations[0].cut_tokens,
                "tokens_before": truncations[0].tokens_before,
                "tokens_after": truncations[0].tokens_after,
            }
            if truncations
            else None
        ),
        extra=extra,
    )
