"""The resolved configuration of a run, by concern, written to RUNDIR/config.json.

Each concern is a frozen dataclass whose fields are declared once (`declared.option`): the
declaration gives the `run` command its flags, names the fields of the resume identity and is
the JSON form, one flat object whose keys are the field names (`extra` holds the method's own
options, those away from their default), as config.json has always been written. A run is
built by concern; a flat object (a config.json, a `--config` file, the command line's values)
goes through `RunConfig.from_json`, the one place that sorts flat names into concerns.

Re-running into the same folder resumes it; that is refused when an identity field (benchmark,
method, model, endpoint, sampling, n, prompt budget, the method's own options such as the
agent's step cap) differs, so one folder never mixes two experiments.

    RunConfig("spider1", "zero-shot", "oracle", Path("runs/o"), execution=Execution(workers=4))
    RunConfig.from_json({"benchmark": "spider1", ..., "workers": 4})  # the same, from config.json
"""

from __future__ import annotations

import functools
import json
import typing
from collections.abc import Iterator, Mapping
from dataclasses import Field, dataclass, field, fields
from pathlib import Path
from typing import Any, cast

from querybench import json_input
from querybench.declared import (
    Declared,
    Spec,
    absent_json,
    check_value,
    declared_fields,
    default_json,
    option,
    required,
    spec_of,
    to_json_value,
)
from querybench.errors import DataError, OptionError
from querybench.methods import MethodOptions, NoOptions, options_type

# Oracle settings of the paper: they read gold material, so a run using one is labelled.
ORACLE_SETTINGS = ("reference_plan", "oracle_functions")
OPTIONS_KEY = "extra"  # the config.json key of the method's own options


@dataclass(frozen=True)
class Endpoint(Declared):
    """Endpoint: where the model answers and how each request is made."""

    base_url: str | None = option(
        None, identity=True, help="OpenAI-compatible endpoint (default $OPENAI_BASE_URL)."
    )
    api_key_env: str = option("OPENAI_API_KEY", help="Variable holding the API key.")
    constant_sql: str | None = option(None, identity=True, help="The reply of --model constant.")
    timeout: float = option(120.0, min=0.001, help="Seconds per HTTP request.")
    max_retries: int = option(5, min=0, help="Retries of a request that got no answer.")
    prices_file: Path | None = option(
        None, flag="--prices", help="Price table JSON {model: {prompt, completion}} USD/1M."
    )


@dataclass(frozen=True)
class Sampling(Declared):
    """Sampling: how many candidates and how each is sampled (unset: the endpoint's default)."""

    n: int = option(1, min=1, identity=True, help="Candidates per task (majority vote).")
    temperature: float | None = option(None, identity=True, help="Sampling temperature.")
    top_p: float | None = option(None, identity=True, help="Nucleus sampling mass.")
    max_tokens: int | None = option(None, min=1, identity=True, help="Tokens per reply at most.")
    seed: int | None = option(None, identity=True, help="Sampling seed.")
    stop: tuple[str, ...] = option((), identity=True, help="Stop sequence (repeatable).")


@dataclass(frozen=True)
class Prompt(Declared):
    """Prompt: what the model is shown besides the question."""

    context_budget: int | None = option(
        16000, min=1, identity=True, help="Tokens of schema + documents in the prompt."
    )
    context_window: int | None = option(
        None, min=1, identity=True, help="Model context (tokens); longer prompts are cut."
    )
    examples: str | None = option(
        None,
        identity=True,
        help="Few-shot pool for dail-sql: a benchmark with gold SQL (spider1, bird, "
        "bird-train) or a JSON/JSONL file of {question, sql}.",
    )
    reference_plan: bool = option(
        False,
        identity=True,
        help="Oracle setting (Spider 2.0): add the task's reference plan to the prompt, from "
        "the gold folder's reference_plan.jsonl in any data root.",
    )
    oracle_functions: bool = option(
        False,
        identity=True,
        help="Oracle setting: add the docs of the functions the gold SQL uses to the prompt.",
    )


@dataclass(frozen=True)
class Selection(Declared):
    """Selection: which tasks, from where, and which finished ones run again."""

    task_file: Path | None = option(
        None, flag="--path", identity=True, help="Task file to read instead of the benchmark's own."
    )
    ids: tuple[str, ...] = option(
        (), split=",", help="Only these instance ids (repeatable or a,b,c)."
    )
    limit: int | None = option(None, min=1, help="First K tasks only.")
    runnable: bool = option(
        False,
        help="Only the tasks that can run here (querybench data status), before --limit: the "
        "others are left out of the run instead of scored engine_unavailable.",
    )
    retry_failed: bool = option(
        False,
        help="Also rerun instances whose reply came back unusable (transport failures, "
        "no reply at all, are retried anyway).",
    )
    data_dir: Path | None = option(None, flag="")  # None: the data roots ($QUERYBENCH_DATA, ...)


@dataclass(frozen=True)
class Execution(Declared):
    """Concurrency: how much runs at once, where, and when the run stops early. Not part of the
    identity: a local run may be resumed on Ray and the other way round."""

    workers: int = option(2, min=1, help="Tasks in progress at once.")
    concurrency: int = option(8, min=1, help="HTTP requests in flight.")
    max_requests: int | None = option(None, min=1, help="Request budget for this invocation.")
    max_consecutive_failures: int = option(
        5,
        min=0,
        help="Stop the run when this many tasks in a row get no reply from the endpoint "
        "(0: never).",
    )
    executor: str = option(
        "local", help="local (this process) or ray (a Ray cluster; pip install 'querybench[ray]')."
    )
    address: str | None = option(
        None, help="Ray cluster to join (auto, ray://host:10001); default a local Ray."
    )


@dataclass(frozen=True)
class Cache(Declared):
    """Cache: model replies kept by request."""

    use_cache: bool = option(True, flag="--cache/--no-cache", help="Reuse cached model replies.")
    cache_dir: Path | None = option(None, flag="")  # None: the user cache folder


@dataclass(frozen=True)
class Scoring(Declared):
    """Scoring: the official evaluation after the run (and the majority vote's executions)."""

    eval_workers: int = option(4, flag="")
    eval_timeout: float = option(30.0, flag="")


@dataclass(frozen=True, init=False)
class RunConfig:
    benchmark: str = required(
        Spec(argument=True, identity=True, help="spider1, bird, spider2-lite, spider2-snow, …")
    )
    method: str = required(
        Spec(
            identity=True,
            cli_default="zero-shot",
            help="zero-shot, dail-sql, din-sql, chess, spider-agent or tool-agent.",
        )
    )
    model: str = required(
        Spec(
            identity=True,
            cli_default="oracle",
            help="Model name at the endpoint, or the labelled oracle / constant.",
        )
    )
    out: Path = required(
        Spec(cli_default=None, help="Run folder (default `runs/<bench>-<method>-<model>`).")
    )
    endpoint: Endpoint = field(default_factory=Endpoint)
    sampling: Sampling = field(default_factory=Sampling)
    prompt: Prompt = field(default_factory=Prompt)
    selection: Selection = field(default_factory=Selection)
    execution: Execution = field(default_factory=Execution)
    cache: Cache = field(default_factory=Cache)
    scoring: Scoring = field(default_factory=Scoring)
    options: MethodOptions = field(default_factory=NoOptions)  # typed per method

    def __init__(
        self,
        benchmark: str,
        method: str,
        model: str,
        out: Path | str,
        *,
        endpoint: Endpoint | None = None,
        sampling: Sampling | None = None,
        prompt: Prompt | None = None,
        selection: Selection | None = None,
        execution: Execution | None = None,
        cache: Cache | None = None,
        scoring: Scoring | None = None,
        options: MethodOptions | None = None,
    ) -> None:
        """The run itself, and each concern given whole (a concern left out, and the method's
        options left out, take their defaults)."""
        given = {
            "endpoint": endpoint,
            "sampling": sampling,
            "prompt": prompt,
            "selection": selection,
            "execution": execution,
            "cache": cache,
            "scoring": scoring,
        }
        core = {"benchmark": benchmark, "method": method, "model": model, "out": out}
        for name, value in core.items():
            object.__setattr__(self, name, check_value(name, value, _core_types()[name]))
        for concern, kind in concerns().items():
            part = given[concern] or kind()
            if not isinstance(part, kind):
                raise OptionError(f"{concern}: expected {kind.__name__}, got {part!r}")
            object.__setattr__(self, concern, part)
        expected = options_type(method)
        options = options if options is not None else expected()
        if not isinstance(options, expected):
            raise OptionError(f"{method} takes {expected.__name__}, not {type(options).__name__}")
        object.__setattr__(self, "options", options)

    @property
    def oracle_settings(self) -> list[str]:
        return [name for name in ORACLE_SETTINGS if getattr(self.prompt, name)]

    def to_json(self) -> dict[str, Any]:
        """The flat config.json object."""
        out: dict[str, Any] = {name: to_json_value(getattr(self, name)) for name in _core_types()}
        for concern in concerns():
            out |= getattr(self, concern).json_values()
        out[OPTIONS_KEY] = self.options.json_values(changed_only=True)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunConfig:
        """The inverse of `to_json`: a flat object keyed by config.json's names (a key left
        out takes its default; `extra` the method's options as a dict), each value checked as
        its concern checks it; `OptionError` for a name that is no option."""
        values = dict(data)
        missing = [name for name in _core_types() if name not in values]
        if missing:
            raise OptionError(f"a run configuration needs {', '.join(missing)}")
        core = [values.pop(name) for name in _core_types()]
        extra = values.pop(OPTIONS_KEY, None)
        by_concern: dict[str, dict[str, Any]] = {}
        for name, value in values.items():
            if name not in _flat_names():
                raise OptionError(f"RunConfig: no option {name!r}")
            by_concern.setdefault(_flat_names()[name], {})[name] = value
        parts = {c: kind(**by_concern.get(c, {})) for c, kind in concerns().items()}
        method = check_value("method", core[1], str)
        options = options_type(method).from_values(dict(extra or {}), owner=method)
        return cls(*core, options=options, **cast(Any, parts))


@functools.cache
def concerns() -> dict[str, type[Declared]]:
    """RunConfig's concern attributes and their types, in order."""
    return {
        f.name: kind
        for f in fields(RunConfig)
        if isinstance(kind := _hints()[f.name], type) and issubclass(kind, Declared)
    }


@functools.cache
def _hints() -> dict[str, Any]:
    return typing.get_type_hints(RunConfig)


@functools.cache
def _core_types() -> dict[str, Any]:
    """The fields of the run itself (benchmark, method, model, out): neither a concern nor the
    method's options."""
    rest = {*concerns(), "options"}
    return {f.name: _hints()[f.name] for f in fields(RunConfig) if f.name not in rest}


@functools.cache
def _flat_names() -> dict[str, str]:
    """Every concern field's name -> its concern (names are unique across concerns)."""
    out: dict[str, str] = {}
    for concern, kind in concerns().items():
        for f, _, _ in declared_fields(kind):
            assert f.name not in out, f"{f.name} is declared twice"
            out[f.name] = concern
    return out


def declarations() -> Iterator[tuple[Field[Any], Spec, Any]]:
    """(field, spec, annotation) of every core and concern field, in order: the CLI's options
    and the resume identity read this (the method's own: `declared_fields(options_type(m))`)."""
    for f in fields(RunConfig):
        if f.name in _core_types():
            yield f, spec_of(f), _hints()[f.name]
    for kind in concerns().values():
        yield from declared_fields(kind)


def check_resume(config: RunConfig) -> None:
    """Write config.json, or check that the folder's earlier config is the same experiment."""
    path = config.out / "config.json"
    current = config.to_json()
    if path.is_file():
        try:
            earlier = json_input.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DataError(f"{path} is unreadable ({exc}); use a new --out folder") from exc
        changes = identity_changes(config, earlier)
        if changes:
            detail = ", ".join(f"{k}: {before!r} -> {after!r}" for k, before, after in changes)
            raise DataError(
                f"{config.out} holds another experiment ({detail}); use a new --out folder"
            )
    config.out.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(current, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def identity_changes(config: RunConfig, earlier: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(field, earlier, now) of each identity field that differs from an earlier config.json;
    a key an older config.json lacks held its default then (or the `before_it` its option
    declares, where the behaviour before the option was another)."""
    current = config.to_json()
    changes = []
    for f, spec, _ in declarations():
        if spec.identity:
            before, after = earlier.get(f.name, absent_json(f)), current[f.name]
            if before != after:
                changes.append((f.name, before, after))
    kind = type(config.options)
    identity = [f for f, spec, _ in declared_fields(kind) if spec.identity]
    defaults = {f.name: default_json(f) for f in identity}
    absent = {f.name: absent_json(f) for f in identity}
    now = {k: v for k, v in config.options.json_values().items() if k in defaults}
    before_options = earlier.get(OPTIONS_KEY) or {}
    for key in sorted({*before_options, *now}):
        before, after = before_options.get(key, absent.get(key)), now.get(key, defaults.get(key))
        if before != after:
            changes.append((key, before, after))
    return changes
