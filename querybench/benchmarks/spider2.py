"""Spider 2.0: lite and snow (SQL over cloud and local warehouses), DBT projects, and the
agentic setting's 632 tasks. Their metadata, documents and gold folders share one release."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from querybench.benchmarks import eval_options as eo
from querybench.benchmarks.spec import Benchmark, BenchmarkSpec, Family
from querybench.declared import Declared, option

_EVAL = "querybench.runs.eval_locations"
_SQL_FILES = (  # spider2-lite/README.md's folder, the rebuilt copies, the agentic folder's
    "spider2/spider2-lite/resource/databases/spider2-localdb/{db}.sqlite",
    "spider2-lite-local/{db}.sqlite",
    "spider2/spider2/resource/databases/local/{db}.sqlite",
)


@dataclass(frozen=True)
class Spider2EvalOptions(Declared):
    """`eval spider2-lite` and `eval spider2-snow`."""

    predictions: Path | None = eo.predictions(
        "Folder of `<instance_id>.csv` (or `.sql` in sql mode)."
    )
    mode: str = option("exec_result", help="exec_result (CSV results) or sql.")
    gold_dir: Path | None = eo.location(
        "Gold folder (exec_result/, sql/, eval jsonl); default: the data."
    )
    db_dir: Path | None = eo.location(
        "sql mode: folder of `<db>.sqlite` for local tasks (default: the Spider "
        "2.0 database folders of the data roots; see `querybench data status`)."
    )
    scoring: str = eo.scoring()
    workers: int = eo.workers()
    timeout: float = eo.timeout(60.0, "Seconds per query (sql mode).")
    output: Path | None = eo.output()
    tasks_file: Path | None = eo.location("sql mode: task jsonl naming each task's database.")
    executor: str = eo.executor()
    address: str | None = eo.address()
    # a prediction file's read limits (`evaluation.prediction_file.ReadLimits`; their
    # defaults, the readers' too, declared in eval_options)
    max_bytes: int = option(
        eo.MAX_BYTES, help="Bytes one prediction file may have (else too_large).", min=1
    )
    max_columns: int = option(
        eo.MAX_COLUMNS, help="Columns one prediction may have (else too_large).", min=1
    )
    max_cells: int = option(
        eo.MAX_CELLS, help="Cells (rows x columns) one prediction may have.", min=1
    )
    max_line_bytes: int = option(
        eo.MAX_LINE_BYTES, help="Bytes one line of a prediction file may have.", min=1
    )
    read_timeout: float = eo.timeout(
        eo.READ_SECONDS,
        "Seconds reading one prediction file may take (on a network or FUSE mount; "
        "a local disk's read always returns).",
    )
    runnable: bool = eo.runnable()


@dataclass(frozen=True)
class DbtEvalOptions(Declared):
    """`eval spider2-dbt`."""

    predictions: Path | None = eo.predictions(
        "Folder of `<instance_id>/<db>.duckdb`, the databases left."
    )
    data_dir: Path | None = eo.location("Data root holding spider2/spider2-dbt (tasks, gold).")
    gold_dir: Path | None = eo.location("Gold folder `<instance_id>/<file>`; default: the data.")
    workers: int = eo.workers()
    timeout: float = eo.timeout(120.0, "Seconds to open one database and read its tables.")
    output: Path | None = eo.output()
    runnable: bool = eo.runnable()


@dataclass(frozen=True)
class AgenticEvalOptions(Declared):
    """`eval spider2`."""

    predictions: Path | None = eo.predictions(
        "Submission folder: results_metadata.jsonl and one folder per instance."
    )
    gold_dir: Path | None = eo.location(
        "Gold folder `<instance_id>/<file>` (with spider2_eval.jsonl)."
    )
    scoring: str = eo.scoring()
    data_dir: Path | None = eo.location("Data root holding spider2/spider2 (tasks, gold).")
    workers: int = eo.workers()
    timeout: float = eo.timeout(
        120.0, "Seconds per query of a .sql answer, and to read one .duckdb answer."
    )
    output: Path | None = eo.output()
    runnable: bool = eo.runnable()


def _spider2(
    name: Benchmark, folder: str, title: str, task_file: str, **declared: Any
) -> BenchmarkSpec:
    """A benchmark of the Spider 2.0 release: its tasks (`task_file`) and gold in its folder
    `spider2/<folder>`, its databases and data-layout option those of every Spider 2.0 one."""
    return BenchmarkSpec(
        name=name,
        family=Family.SPIDER2,
        title=title,
        folder="spider2",
        task_files=(f"spider2/{folder}/{task_file}",),
        sqlite_files=_SQL_FILES,
        gold_dir=f"spider2/{folder}/evaluation_suite/gold",
        releases=f"querybench.data.releases:{name.name}_PARTS",
        **{"layout_options": (("data_dir", None),), **declared},
    )


def _lite_or_snow(name: Benchmark, folder: str, title: str, **declared: Any) -> BenchmarkSpec:
    return _spider2(
        name,
        folder,
        title,
        f"{folder}.jsonl",
        loader="querybench.tasks.spider2:load",
        evaluator="querybench.evaluation.spider2.evaluate:evaluate_spider2",
        evaluator_keywords=(("benchmark", name.value),),
        eval_options=Spider2EvalOptions,
        resolver=f"{_EVAL}:spider2_locations",
        command="querybench.commands.eval_run:spider2",
        writer="querybench.runs.outputs:score_spider2",
        on_ray=True,
        runs_queries="in sql mode",
        spider2_resources=folder,
        official_variant=folder.removeprefix("spider2-"),
        **declared,
    )


SPECS = (
    _lite_or_snow(Benchmark.SPIDER2_LITE, "spider2-lite", "Spider 2.0-lite (547 tasks)"),
    _lite_or_snow(
        Benchmark.SPIDER2_SNOW,
        "spider2-snow",
        "Spider 2.0-snow (547 tasks)",
        task_keys=("instruction", "db_id"),
        translates=Benchmark.SPIDER2_LITE,
        one_engine="snowflake",
    ),
    _spider2(
        Benchmark.SPIDER2_DBT,
        "spider2-dbt",
        "Spider 2.0-DBT (68 DBT projects)",
        "examples/spider2-dbt.jsonl",
        loader="querybench.tasks.spider2_dbt:load",
        evaluator="querybench.evaluation.spider2.agentic.dbt:evaluate_spider2_dbt",
        eval_options=DbtEvalOptions,
        resolver=f"{_EVAL}:dbt_locations",
        command="querybench.commands.eval_run:spider2_dbt",
        writer="querybench.runs.outputs:score_dbt",
        dbt_projects=True,
    ),
    _spider2(
        Benchmark.SPIDER2,
        "spider2",
        "Spider 2.0 agentic setting (632 tasks)",
        "examples/spider2.jsonl",
        loader="querybench.tasks.spider2_agentic:load",
        evaluator="querybench.evaluation.spider2.agentic.evaluate:evaluate_spider2_agentic",
        eval_options=AgenticEvalOptions,
        # seconds per .sql answer
        layout_options=(("data_dir", None), ("timeout", AgenticEvalOptions.timeout)),
        runs_queries="always",
        resolver=f"{_EVAL}:agentic_locations",
        command="querybench.commands.eval_run:spider2_agentic",
        writer="querybench.runs.outputs:score_agentic",
        agentic=True,
    ),
)
