"""Spider 2.0: lite and snow (SQL over cloud and local warehouses), DBT projects, and the
agentic setting's 632 tasks. Their metadata, documents and gold folders share one release."""

from __future__ import annotations

from querybench.benchmarks.spec import Benchmark, BenchmarkSpec, Family

_EVAL = "querybench.runs.eval_locations"
_OPTIONS = "querybench.runs.evaluate_options"
_SQL_FILES = (  # spider2-lite/README.md's folder, the rebuilt copies, the agentic folder's
    "spider2/spider2-lite/resource/databases/spider2-localdb/{db}.sqlite",
    "spider2-lite-local/{db}.sqlite",
    "spider2/spider2/resource/databases/local/{db}.sqlite",
)


def _lite_or_snow(name: Benchmark, folder: str, title: str) -> BenchmarkSpec:
    return BenchmarkSpec(
        name=name,
        family=Family.SPIDER2,
        title=title,
        folder="spider2",
        task_files=(f"spider2/{folder}/{folder}.jsonl",),
        sqlite_files=_SQL_FILES,
        gold_dir=f"spider2/{folder}/evaluation_suite/gold",
        loader="querybench.tasks.spider2:load",
        evaluator="querybench.evaluation.spider2_eval:evaluate_spider2",
        evaluator_keywords=(("benchmark", name.value),),
        options=f"{_OPTIONS}:Spider2Options",
        layout_options=(("data_dir", None),),
        resolver=f"{_EVAL}:spider2_locations",
        command="querybench.commands.eval_run:spider2",
        writer="querybench.runs.outputs:score_spider2",
        releases=f"querybench.releases:{name.name}_PARTS",
        on_ray=True,
        runs_queries="in sql mode",
        spider2_resources=folder,
    )


SPECS = (
    _lite_or_snow(Benchmark.SPIDER2_LITE, "spider2-lite", "Spider 2.0-lite (547 tasks)"),
    _lite_or_snow(Benchmark.SPIDER2_SNOW, "spider2-snow", "Spider 2.0-snow (547 tasks)"),
    BenchmarkSpec(
        name=Benchmark.SPIDER2_DBT,
        family=Family.SPIDER2,
        title="Spider 2.0-DBT (68 DBT projects)",
        folder="spider2",
        task_files=("spider2/spider2-dbt/examples/spider2-dbt.jsonl",),
        sqlite_files=_SQL_FILES,
        gold_dir="spider2/spider2-dbt/evaluation_suite/gold",
        loader="querybench.tasks.spider2_dbt:load",
        evaluator="querybench.evaluation.spider2_dbt:evaluate_spider2_dbt",
        options=f"{_OPTIONS}:DbtOptions",
        layout_options=(("data_dir", None),),
        resolver=f"{_EVAL}:dbt_locations",
        command="querybench.commands.eval_run:spider2_dbt",
        writer="querybench.runs.outputs:score_dbt",
        releases="querybench.releases:SPIDER2_DBT_PARTS",
    ),
    BenchmarkSpec(
        name=Benchmark.SPIDER2,
        family=Family.SPIDER2,
        title="Spider 2.0 agentic setting (632 tasks)",
        folder="spider2",
        task_files=("spider2/spider2/examples/spider2.jsonl",),
        sqlite_files=_SQL_FILES,
        gold_dir="spider2/spider2/evaluation_suite/gold",
        loader="querybench.tasks.spider2_agentic:load",
        evaluator="querybench.evaluation.spider2_agentic_eval:evaluate_spider2_agentic",
        options=f"{_OPTIONS}:AgenticOptions",
        layout_options=(("data_dir", None), ("timeout", 120.0)),  # seconds per .sql answer
        runs_queries="always",
        resolver=f"{_EVAL}:agentic_locations",
        command="querybench.commands.eval_run:spider2_agentic",
        writer="querybench.runs.outputs:score_agentic",
        releases="querybench.releases:SPIDER2_PARTS",
    ),
)
