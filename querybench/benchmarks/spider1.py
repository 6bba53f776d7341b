"""Spider 1.0 dev: 1,034 questions over 20 SQLite databases, scored by the test-suite
execution match (official and strict); `spider1_family` and `spider1_variant` give a
benchmark shaped as it is (the same formats, loader, scorer, eval command and run scoring)
its behaviour."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from querybench.benchmarks.spec import Benchmark, BenchmarkSpec, Family, QuestionFormat

SPIDER1_DATABASES = ("spider1/database/{db}/{db}.sqlite", "spider1/{db}/{db}.sqlite")


def spider1_family(declared: BenchmarkSpec) -> BenchmarkSpec:
    """`declared` (its name, files and question format) with Spider 1.0's behaviour, its gold
    file and databases found in the data unless given."""
    return replace(
        declared,
        **{
            **_SPIDER1_BEHAVIOUR,
            "resolver": "querybench.runs.eval_locations:dev_locations",
            "layout_options": (("data_dir", None),),
        },
    )


def spider1_variant(declared: BenchmarkSpec) -> BenchmarkSpec:
    """A variant of Spider 1.0: its behaviour, the gold its tasks' (the data has no gold
    file) and the databases its folders', so `eval <variant> --predictions` suffices."""
    return replace(
        declared,
        **{
            **_SPIDER1_BEHAVIOUR,
            "resolver": "querybench.runs.eval_locations:spider1_locations",
            "layout_options": (("data_dir", None),),
        },
    )


_SPIDER1_BEHAVIOUR: dict[str, Any] = {
    "loader": "querybench.tasks.spider1:load",
    "evaluator": "querybench.evaluation.spider1:evaluate_spider1",
    "options": "querybench.runs.evaluate_options:Spider1Options",
    "command": "querybench.commands.eval_execution:spider1",
    "writer": "querybench.runs.outputs:score_spider1",
    "on_ray": True,
    "runs_queries": "always",
}


SPECS = (
    spider1_family(
        BenchmarkSpec(
            name=Benchmark.SPIDER1,
            family=Family.SPIDER1,
            title="Spider 1.0 (dev, 1,034 questions)",
            folder="spider1",
            task_files=("spider1/dev.json",),
            sqlite_files=SPIDER1_DATABASES,
            questions=QuestionFormat(),
            releases="querybench.releases:SPIDER1_PARTS",
        )
    ),
)
