"""BIRD: dev (2024-06-27), its 2025-11-06 revision, mini-dev (SQLite, MySQL, PostgreSQL) and
train, all scored by the same execution match; `BIRD_PATHS`, where each split sits under a
data root, is the one table every reader of a data root takes its BIRD paths from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from querybench.benchmarks import eval_options as eo
from querybench.benchmarks.spec import Benchmark, BenchmarkSpec, Family
from querybench.declared import Declared, option


@dataclass(frozen=True)
class BirdPaths:
    """Where one BIRD split sits under a data root, the official unpacking first: its question
    file (`{dialect}`: mini-dev's sqlite, mysql and postgresql files) and the folders holding
    its `<db_id>/<db_id>.sqlite` (`envs/bird_data.py` reads a split folder a trainer names, and
    says why it keeps its own list)."""

    questions: tuple[str, ...]
    databases: tuple[str, ...]

    def question_files(self, dialect: str = "sqlite") -> tuple[str, ...]:
        return tuple(q.format(dialect=dialect) for q in self.questions)


_DEV_DATABASES = (
    "bird/dev_databases",
    "bird/dev_databases/dev_databases",  # the inner zip unpacked in place
    "bird/database",
    "bird",  # flat, as this project's data folder keeps dev
)

BIRD_PATHS: dict[str, BirdPaths] = {
    Benchmark.BIRD: BirdPaths(("bird/dev.json", "bird/dev/dev.json"), _DEV_DATABASES),
    Benchmark.BIRD_DEV_20251106: BirdPaths(  # the revised questions are over dev's databases
        ("bird/dev_20251106.json", "bird/dev_20251106/dev_20251106.json"), _DEV_DATABASES
    ),
    # mini-dev in a folder of its own (`data fetch`'s, or the official MINIDEV) with the
    # databases minidev.zip ships; its questions may also sit flat beside dev's. Its databases
    # are never looked for among dev's (the mini-dev README allows dev's original databases
    # for SQLite only; name them with --db-dir)
    Benchmark.BIRD_MINI_DEV: BirdPaths(
        (
            "bird/mini_dev/mini_dev_{dialect}.json",
            "bird/MINIDEV/mini_dev_{dialect}.json",
            "bird/mini_dev_{dialect}.json",
        ),
        ("bird/mini_dev/dev_databases", "bird/MINIDEV/dev_databases"),
    ),
    Benchmark.BIRD_TRAIN: BirdPaths(
        ("bird/train/train.json", "bird/train.json"),
        (
            "bird/train/train_databases",
            "bird/train/train_databases/train_databases",
            "bird/train_databases",
        ),
    ),
}


_PREDICTIONS = (
    'Prediction JSON: {"<question_id>": "SQL\\t----- bird -----\\t<db_id>"}, keyed by '
    'question_id or, as the official mini-dev files, by position ("0", "1", ...).'
)


def _metrics() -> Any:
    return option(
        "ex",
        help="Comma-separated, as BIRD mini-dev's official scripts: ex (execution match, the "
        "score; always computed), soft_f1 (Soft-F1), r_ves (reward-based VES: each matched pair "
        "is timed --ves-repeats times, so it is SLOW and its figures depend on the machine's "
        "load; use --workers 1 on an idle host).",
    )


def _ves_repeats() -> Any:
    return option(100, help="r_ves: timed runs of each matched pair (official: 100).", min=1)


@dataclass(frozen=True)
class _BirdFamilyOptions(Declared):
    """The options every BIRD eval takes, in the order of their flags (each benchmark words its
    own `questions` and `db_dir`, which keep their place here)."""

    predictions: Path | None = eo.predictions(_PREDICTIONS)
    questions: Path | None = eo.location("")
    db_dir: Path | None = eo.location("")
    metrics: str = _metrics()
    ves_repeats: int = _ves_repeats()
    timeout: float = eo.timeout(30.0, "Seconds per query.")
    workers: int = eo.workers()
    output: Path | None = eo.output()
    executor: str = eo.executor()
    address: str | None = eo.address()


@dataclass(frozen=True)
class BirdEvalOptions(_BirdFamilyOptions):
    """`eval bird`."""

    questions: Path | None = eo.location("BIRD question file (dev.json); default the data's.")
    db_dir: Path | None = eo.location(
        "Databases at `DIR/<db_id>/<db_id>.sqlite`; default the data's."
    )
    runnable: bool = eo.runnable()


@dataclass(frozen=True)
class MiniDevEvalOptions(_BirdFamilyOptions):
    """`eval bird-mini-dev`."""

    placed_after: ClassVar[dict[str, str]] = {"dialect": "predictions", "db_url": "db_dir"}

    questions: Path | None = eo.location(
        "Questions file; default the data's mini_dev_DIALECT.json."
    )
    db_dir: Path | None = eo.location(
        "sqlite: databases at `DIR/<db_id>/<db_id>.sqlite`; default the data."
    )
    dialect: str = option(
        "sqlite", help="sqlite, mysql or postgresql: which mini-dev file and engine."
    )
    db_url: str | None = option(
        None,
        help="mysql/postgresql: the server database, e.g. mysql://root@127.0.0.1:3306/BIRD "
        "(every table in one database, as the official dumps) or …/bird_{db_id} (one per "
        "db_id); load it from the SQLite files with `querybench db load`.",
    )


def _bird(name: Benchmark, title: str, **declared: object) -> BenchmarkSpec:
    paths = BIRD_PATHS[name]
    return BenchmarkSpec(
        name=name,
        family=Family.BIRD,
        title=title,
        folder="bird",
        task_files=paths.question_files(),
        sqlite_files=tuple(f"{folder}/{{db}}/{{db}}.sqlite" for folder in paths.databases),
        loader="querybench.tasks.bird:load",
        writer="querybench.runs.outputs:score_bird",
        releases=f"querybench.data.releases:{name.name}_PARTS",
        runs_queries="always",
        **declared,  # type: ignore[arg-type]
    )


SPECS = (
    _bird(
        Benchmark.BIRD,
        "BIRD dev (1,534 questions)",
        evaluator="querybench.evaluation.bird.evaluate:evaluate_bird",
        eval_options=BirdEvalOptions,
        resolver="querybench.runs.eval_locations:dev_locations",
        layout_options=(("data_dir", None),),
        command="querybench.commands.eval_execution:bird",
        on_ray=True,
    ),
    _bird(
        Benchmark.BIRD_MINI_DEV,
        "BIRD mini-dev (500 questions; SQLite, MySQL, PostgreSQL)",
        evaluator="querybench.evaluation.bird.evaluate:evaluate_bird",
        eval_options=MiniDevEvalOptions,
        layout_options=(("dialect", MiniDevEvalOptions.dialect),),
        resolver="querybench.runs.eval_locations:mini_dev_locations",
        command="querybench.commands.eval_execution:bird_mini_dev",
        on_ray=True,
    ),
    _bird(Benchmark.BIRD_DEV_20251106, "BIRD dev, 2025-11-06 revision"),
    _bird(Benchmark.BIRD_TRAIN, "BIRD train", failing_gold=True),
)
