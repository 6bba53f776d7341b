"""The options of `querybench.evaluate`, typed per benchmark for a user's type checker.

Each is the benchmark evaluator's keyword parameters plus the data-layout options `evaluate`
reads itself; `tests/test_evaluate_api.py` holds them equal to what `evaluate` accepts at run
time, so this file cannot drift from the evaluators. (No `from __future__ import annotations`:
the keys must be seen at run time.)
"""

from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict

from querybench.benchmarks import resolve, specs

if TYPE_CHECKING:
    from querybench.engines.base import Result
    from querybench.evaluation.bird.metrics import BirdMetric
    from querybench.evaluation.prediction_file import ReadLimits
    from querybench.tasks.model import Task

Location = str | Path
Scoring = Literal["official", "strict"]


class Spider2Options(TypedDict, total=False):
    """spider2-lite, spider2-snow (`evaluate_spider2`)."""

    data_dir: Location | None
    gold_dir: Location | None
    db_dir: Location | Sequence[Path] | None
    tasks_file: Location | None
    mode: Literal["exec_result", "sql"]
    scoring: Scoring
    workers: int
    timeout: float
    write_csv: bool
    limits: "ReadLimits | None"
    instance_ids: Collection[str] | None


class Spider1Options(TypedDict, total=False):
    """spider1, spider-syn, spider-dk (`evaluate_spider1`): the gold file (a variant's: its
    tasks) and the database folders default to the data's."""

    data_dir: Location | None
    gold: "Location | Sequence[Task] | None"  # a variant's gold: its tasks (the default)
    db_dir: Location | Sequence[Path] | None
    questions: Location | None
    timeout: float | None
    workers: int
    cache_dir: Location | None
    instance_ids: Collection[str] | None
    metrics: Sequence[str]
    tables: Location | None
    plug_value: bool
    keep_distinct: bool


class _BirdCommon(TypedDict, total=False):
    metrics: "Sequence[BirdMetric]"
    db_url: str | None
    ves_repeats: int
    timeout: float | None
    workers: int
    cache_dir: Location | None
    clock: Callable[[], float]
    instance_ids: Collection[str] | None


class BirdOptions(_BirdCommon, total=False):
    """bird (`evaluate_bird`): the questions file and the database folder default to the
    data's."""

    data_dir: Location | None
    questions: Location | None
    db_dir: Location | None


class MiniDevOptions(_BirdCommon, total=False):
    """bird-mini-dev (`evaluate_bird`): questions and databases default to the data's."""

    questions: Location | None
    db_dir: Location | None
    dialect: Literal["sqlite", "mysql", "postgresql"]


class DbtOptions(TypedDict, total=False):
    """spider2-dbt (`evaluate_spider2_dbt`)."""

    data_dir: Location | None
    tasks: "Sequence[Task] | None"
    gold_dir: Location | None
    workers: int
    timeout: float


class AgenticOptions(TypedDict, total=False):
    """spider2, the agentic setting (`evaluate_spider2_agentic`)."""

    data_dir: Location | None
    timeout: float
    tasks: "Sequence[Task] | None"
    gold_dir: Location | None
    scoring: Scoring
    run_sql: "Callable[[Task, str], Result] | None"
    workers: int


# benchmark -> its options, as its spec names them (`BenchmarkSpec.options`)
OPTIONS: dict[str, type] = {s.name: resolve(s.options) for s in specs() if s.options is not None}
