"""The one task model every benchmark loader produces and every method, agent and scorer reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from querybench.engines.registry import EngineKind

FEATURES = (
    "nested",
    "partitioned",
    "multi_schema",
    "documentation",
    "dbt",
    "string_answer",
    "table_answer",
    "database_answer",
    "functions",
)


@dataclass(frozen=True)
class GoldRef:
    """Where a task's gold lives; what exists depends on the benchmark."""

    sql: str | None = None  # gold SQL text, when public
    result_files: tuple[str, ...] = ()  # gold result CSVs (Spider 2.0 exec_result)
    eval_params: dict[str, Any] = field(default_factory=dict)  # condition_cols, ignore_order...


@dataclass(frozen=True)
class Task:
    instance_id: str
    benchmark: str  # spider2-lite, spider2-snow, spider2-dbt, bird, bird-mini-dev, spider1, custom
    question: str
    db: str  # database id
    engine: EngineKind
    external_knowledge: str | None = None  # document name or text
    gold: GoldRef = field(default_factory=GoldRef)
    difficulty: str | None = None
    features: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)  # benchmark-specific fields kept as read
