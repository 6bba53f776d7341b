"""The resolved configuration of a run, written to RUNDIR/config.json.

Re-running into the same folder resumes it; that is refused when a field that changes the
answers (benchmark, method, model, endpoint, sampling, n, prompt budget, the method's own
options in `extra` such as the agent's step cap) differs, so one folder never mixes two
experiments.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from querybench.errors import DataError

# Fields whose change would make earlier records answers to a different experiment.
IDENTITY = (
    "benchmark",
    "method",
    "model",
    "base_url",
    "constant_sql",
    "n",
    "temperature",
    "top_p",
    "max_tokens",
    "seed",
    "stop",
    "context_budget",
    "context_window",
    "task_file",
    "examples",
    "reference_plan",
    "oracle_functions",
)
# Oracle settings of the paper: they read gold material, so a run using one is labelled.
ORACLE_SETTINGS = ("reference_plan", "oracle_functions")


@dataclass(frozen=True)
class RunConfig:
    benchmark: str
    method: str
    model: str
    out: Path
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    constant_sql: str | None = None
    n: int = 1
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    limit: int | None = None
    ids: tuple[str, ...] = ()
    workers: int = 2
    concurrency: int = 8  # HTTP requests in flight at most
    max_requests: int | None = None  # per-run request budget
    timeout: float = 120.0  # seconds per HTTP request
    max_retries: int = 5
    context_budget: int | None = 16000
    context_window: int | None = None
    prices_file: Path | None = None
    use_cache: bool = True
    cache_dir: Path | None = None
    data_dir: Path | None = None
    task_file: Path | None = None
    examples: str | None = None  # few-shot pool of dail-sql: a benchmark name or a JSONL file
    eval_workers: int = 4
    eval_timeout: float = 30.0
    retry_failed: bool = False  # rerun failed instances, answers that were unusable included
    max_consecutive_failures: int = 5  # transport failures in a row that stop the run
    reference_plan: bool = False  # oracle: the task's reference plan in the prompt
    oracle_functions: bool = False  # oracle: docs of the functions the gold SQL uses
    extra: dict[str, Any] = field(default_factory=dict)
    # Where instances are solved: "local" (this process) or "ray" (a Ray cluster at `address`,
    # or a local Ray without one). Not part of the identity: either may resume the other's run.
    executor: str = "local"
    address: str | None = None

    @property
    def oracle_settings(self) -> list[str]:
        return [name for name in ORACLE_SETTINGS if getattr(self, name)]

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for key, value in out.items():
            if isinstance(value, Path):
                out[key] = str(value)
            elif isinstance(value, tuple):
                out[key] = list(value)
        return out


def check_resume(config: RunConfig) -> None:
    """Write config.json, or check that the folder's earlier config is the same experiment."""
    path = config.out / "config.json"
    current = config.to_json()
    if path.is_file():
        try:
            earlier = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DataError(f"{path} is unreadable ({exc}); use a new --out folder") from exc
        # a key an older config.json lacks held its default then
        defaults = {f.name: f.default for f in fields(RunConfig)}
        changes = [
            (k, earlier.get(k, defaults.get(k)), current.get(k))
            for k in IDENTITY
            if earlier.get(k, defaults.get(k)) != current.get(k)
        ]
        changes += _option_changes(config.method, earlier.get("extra") or {}, config.extra)
        if changes:
            detail = ", ".join(f"{k}: {before!r} -> {after!r}" for k, before, after in changes)
            raise DataError(
                f"{config.out} holds another experiment ({detail}); use a new --out folder"
            )
    config.out.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(current, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def _option_changes(
    method: str, earlier: dict[str, Any], current: dict[str, Any]
) -> list[tuple[str, Any, Any]]:
    """Method options that differ, an option left unset counting as its default."""
    from querybench.methods import option_defaults

    defaults = option_defaults(method)
    out = []
    for key in sorted({*earlier, *current}):
        before, after = earlier.get(key, defaults.get(key)), current.get(key, defaults.get(key))
        if before != after:
            out.append((key, before, after))
    return out
