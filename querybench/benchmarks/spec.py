"""The benchmark's names and what a benchmark declares about itself (no behaviour here).

`Benchmark` is the one list of names. A `BenchmarkSpec` is pure data: where its files sit under a
data root, and its loader, evaluator, eval command, run scorer and release parts named by
`"module:attr"`, so that reading the table imports nothing of the layers above (each is
imported by `querybench.benchmarks.resolve` when it is used), as the engine registry names its
openers.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from querybench.declared import Declared


class Benchmark(StrEnum):
    """Every benchmark querybench knows; the values are the names the command line, task and
    result JSON hold."""

    SPIDER2_LITE = "spider2-lite"
    SPIDER2_SNOW = "spider2-snow"
    SPIDER2_DBT = "spider2-dbt"
    SPIDER2 = "spider2"
    BIRD = "bird"
    BIRD_DEV_20251106 = "bird-dev-20251106"
    BIRD_MINI_DEV = "bird-mini-dev"
    BIRD_TRAIN = "bird-train"
    SPIDER1 = "spider1"
    SPIDER_SYN = "spider-syn"
    SPIDER_DK = "spider-dk"
    CUSTOM = "custom"

    def __repr__(self) -> str:
        return repr(self.value)  # `{name!r}` reads as it did for a str


class Family(StrEnum):
    """Which shared machinery a benchmark uses: its metadata and resources (Spider 2.0), its
    prediction format and scorer (Spider 1.0's text files, BIRD's JSON)."""

    SPIDER2 = "spider2"
    SPIDER1 = "spider1"
    BIRD = "bird"
    CUSTOM = "custom"


@dataclass(frozen=True)
class ReportGroup:
    """A `report` section of its own: the tasks grouped by one of their `extra` fields."""

    title: str  # "by knowledge type"
    field: str  # the `Task.extra` key holding each task's group


@dataclass(frozen=True)
class QuestionFormat:
    """How a Spider 1.0-shaped question file names its fields (the variants rename them)."""

    question: str = "question"
    kept: tuple[str, ...] = ()  # fields kept in `Task.extra` (Spider-DK's `type`)
    labels: tuple[tuple[str, str], ...] = ()  # a kept value's label (Spider-DK's 34: "T3+T4")
    # where difficulty comes from: "parsed", the file's own `sql` field; "spider1-position",
    # the Spider 1.0 dev item at the same position; "query", the gold query parsed against its
    # database's schema (as the official evaluation grades it)
    hardness: str = "parsed"


@dataclass(frozen=True)
class BenchmarkSpec:
    """One benchmark, declared once; `querybench.benchmarks.spec(name)` finds it."""

    name: Benchmark
    family: Family
    title: str  # one line for listings and help
    folder: str  # its folder under a data root ("" for none)
    task_files: tuple[str, ...] = ()  # its task file, relative to a data root, official first
    sqlite_files: tuple[str, ...] = ()  # where a task's `{db}` SQLite file is, in lookup order
    gold_dir: str | None = None  # the gold folder (Spider 2.0; the others' gold is in the tasks)
    loader: str = ""  # "module:attr": (spec, root, file, with_gold) -> list[Task]
    questions: QuestionFormat | None = None  # Spider 1.0-shaped files: how they are read
    evaluator: str | None = None  # "module:attr": evaluate_<x>(predictions, *, ..., on_result)
    evaluator_keywords: tuple[tuple[str, Any], ...] = ()  # arguments its name fixes
    # its options, declared once: the flags, defaults and help of `querybench eval <name>`,
    # the evaluator's defaults, and the typed options object `evaluate` takes
    eval_options: type[Declared] | None = None
    layout_options: tuple[tuple[str, Any], ...] = ()  # options that only say where data is
    resolver: str | None = None  # "module:attr": (spec, options, layout) -> evaluator arguments
    command: str | None = None  # "module:attr": the body of `querybench eval <name>`
    writer: str | None = None  # "module:attr": a run's predictions, written and scored
    releases: str | None = None  # "module:attr": its parts for `data fetch`
    on_ray: bool = False  # `evaluate(..., executor="ray")` shards it
    # whether scoring it runs queries (so its timeout policy decides verdicts): "always",
    # "in sql mode" (lite/snow: only `mode="sql"`), or "" (never: the DBT databases are read)
    runs_queries: str = ""
    report_groups: tuple[ReportGroup, ...] = ()
    spider2_resources: str | None = None  # Spider 2.0: its `resource/` folder's benchmark
    official_variant: str = ""  # Spider 2.0 lite/snow: the official scorer's name ("lite")
    task_keys: tuple[str, str] = ("question", "db")  # its task file's question and database keys
    translates: Benchmark | None = None  # the benchmark whose tasks it restates (snow: lite's)
    one_engine: str | None = None  # the engine every task runs on (snow: snowflake)
    dbt_projects: bool = False  # each task is a DBT project (the agent builds it)
    agentic: bool = False  # the agentic setting: its own task folders and submission layout
    failing_gold: bool = False  # some gold SQL fails on SQLite: the RL environments skip it

    @property
    def evaluable(self) -> bool:
        return self.evaluator is not None
