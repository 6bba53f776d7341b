"""Spider-Agent as a method: the agent explores the task's database in its workspace and its
final SQL is the prediction the run scores.

Options: `AgentOptions` (`agent/options.py`; `--max-steps`, `--action-timeout`,
`--continue-after-timeout`, `--max-observation-chars`, `--unsafe-bash` on the command line), all
part of the run's identity. The trajectory of each task is written to
`RUNDIR/trajectories/<instance_id>.json`.
With the labelled `oracle` model the agent is driven by `AgentOracle` (gold SQL through
ExecuteSQL, then Terminate). `tool-agent` (`methods/tool_agent.py`) is the same method over
native tool calls. On a DBT task the workspace holds the project and a private copy of its
database; the database the agent leaves is saved to `RUNDIR/predictions/<instance_id>/`.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from querybench.agent.dbt import is_dbt_task, open_dbt_workspace, save_database
from querybench.agent.loop import TEXT, AgentConfig, AgentResult, Driver, run_agent
from querybench.agent.materials import copy_materials
from querybench.agent.options import AgentOptions
from querybench.agent.oracle import AgentOracle
from querybench.agent.status import AgentStatus
from querybench.agent.submission import copy_example, dbt_line, save_submission
from querybench.agent.workspace import Workspace, WorkspaceOptions
from querybench.benchmarks import Family, family, is_agentic
from querybench.data.layout import benchmark_root
from querybench.engines.isolated import connect_isolated
from querybench.errors import EngineUnavailable
from querybench.methods import Candidate, MethodOutput, MethodSettings
from querybench.models.base import ChatRequest, Completion, Message, Usage
from querybench.tasks.databases import task_target

if TYPE_CHECKING:
    from querybench.models.base import ChatModel
    from querybench.tasks.model import Task


class SpiderAgent:
    def __init__(
        self, name: str = "spider-agent", driver: Driver = TEXT, oracle: type[Any] = AgentOracle
    ) -> None:
        self.name = name
        self.driver = driver
        self.oracle = oracle

    async def solve(self, task: Task, model: ChatModel, settings: MethodSettings) -> MethodOutput:
        # a method used directly, without its own options, runs with their defaults
        options = settings.options if isinstance(settings.options, AgentOptions) else AgentOptions()
        config = AgentConfig(
            max_steps=options.max_steps,
            max_observation_chars=options.max_observation_chars,
            context_tokens=options.context_tokens,
            continue_after_timeout=options.continue_after_timeout,
        )
        workspace_options = WorkspaceOptions(
            action_timeout=options.action_timeout, unsafe_bash=options.unsafe_bash
        )
        if model.name == "oracle":
            model = self.oracle()
        start = time.perf_counter()
        result = AgentResult(status=AgentStatus.ERROR)
        try:
            workspace = await asyncio.to_thread(open_workspace, task, settings, workspace_options)
            try:
                context_s = time.perf_counter() - start
                await run_agent(workspace, model, config, settings.sampling, self.driver, result)
                system = self.driver.system_prompt(workspace, config)
                line = None
                if is_agentic(task.benchmark) and settings.run_dir is not None:
                    line = await asyncio.to_thread(_save_spider2, task, result, workspace, settings)
                elif is_dbt_task(task) and settings.run_dir is not None:
                    folder = settings.run_dir / "predictions"
                    await asyncio.to_thread(save_database, workspace, folder)
            finally:
                await asyncio.to_thread(workspace.close)
        except BaseException as exc:  # the trajectory says what ended the task, then it goes on
            result.status = AgentStatus.ERROR
            result.error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            if settings.run_dir is not None:
                write_trajectory(settings.run_dir, task, result)
        output = _output(system, result, context_s)
        if line is not None:
            output.extra["submission"] = line
        elif not is_dbt_task(task) and result.answer is None and result.final_sql is None:
            # ended by a rule (repeated, max_steps, ...) before any Terminate: no prediction,
            # said as such (a DBT task's answer is the database it left, whatever ended it)
            output.extra["no_answer"] = f"the agent gave no answer ({result.status})"
        return output


def _save_spider2(
    task: Task, result: AgentResult, workspace: Workspace, settings: MethodSettings
) -> dict[str, Any]:
    """The official submission line of an agentic Spider 2.0 task; its files are copied to
    `RUNDIR/submission/<instance_id>/` (a DBT task's answer is the database it built)."""
    assert settings.run_dir is not None
    folder = settings.run_dir / "submission"
    if is_dbt_task(task):
        return dbt_line(task, save_database(workspace, folder))
    return save_submission(task, result.answer, workspace, folder)


def open_workspace(task: Task, settings: MethodSettings, options: WorkspaceOptions) -> Workspace:
    root = benchmark_root(task.benchmark, settings.data_dir)
    if is_dbt_task(task):
        return open_dbt_workspace(task, root, options)
    target = task_target(task, settings.data_dir)
    if target is None:
        raise EngineUnavailable(
            f"{task.instance_id}: no {task.engine} database {task.db} here (a local file, "
            "or for Spider 2.0 BigQuery/Snowflake tasks a built emulation)"
        )
    workspace = Workspace(task, connect_isolated(target), options)  # killable at its timeout
    if is_agentic(task.benchmark):
        copy_example(task, workspace.path)  # the agentic setting's own task folder
    elif family(task.benchmark) is Family.SPIDER2:
        copy_materials(task, root, workspace.path)
    return workspace


def write_trajectory(run_dir: Path, task: Task, result: AgentResult) -> Path:
    folder = run_dir / "trajectories"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{task.instance_id}.json"
    payload: dict[str, Any] = {"instance_id": task.instance_id, **result.to_json()}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def _output(system: str, result: AgentResult, context_s: float) -> MethodOutput:
    from querybench.agent.loop import START

    messages = (Message("system", system), Message("user", START))
    completion = Completion(
        text=result.steps[-1].reply if result.steps else "",
        usage=Usage(result.prompt_tokens, result.completion_tokens),
        cost=sum(s.cost for s in result.steps),
        latency_s=sum(s.model_s for s in result.steps),
        attempts=len(result.steps),
    )
    reply = result.answer if result.answer is not None else completion.text
    candidate = Candidate(reply, result.final_sql, completion)
    extra = {"agent_status": result.status, "steps": len(result.steps)}
    prompt_hash = ChatRequest(messages).prompt_hash()
    return MethodOutput(messages, prompt_hash, (candidate,), context_s, extra)


METHOD = SpiderAgent()
