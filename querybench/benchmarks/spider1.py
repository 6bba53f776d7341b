"""Spider 1.0 dev: 1,034 questions over 20 SQLite databases, scored by the test-suite
execution match (official and strict); `spider1_family` and `spider1_variant` give a
benchmark shaped as it is (the same formats, loader, scorer, eval command and run scoring)
its behaviour."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from querybench.benchmarks import eval_options as eo
from querybench.benchmarks.spec import Benchmark, BenchmarkSpec, Family, QuestionFormat
from querybench.declared import Declared, option

SPIDER1_DATABASES = ("spider1/database/{db}/{db}.sqlite", "spider1/{db}/{db}.sqlite")


@dataclass(frozen=True)
class Spider1EvalOptions(Declared):
    """`eval spider1` and its variants'."""

    predictions: Path | None = eo.predictions("One predicted SQL per line.")
    gold: Path | None = eo.location(
        "Gold file: `SQL<TAB>db_id` per line; default the data's dev_gold.sql."
    )
    db_dir: Path | None = eo.location(
        "Databases at `DIR/<db_id>/<db_id>.sqlite`; default the data's."
    )
    questions: Path | None = eo.location(
        "dev.json matching the gold lines: adds each question's hardness (default: "
        "the data's, with its gold)."
    )
    timeout: float = eo.timeout(30.0, "Seconds per query.")
    workers: int = eo.workers()
    output: Path | None = eo.output()
    executor: str = eo.executor()
    address: str | None = eo.address()
    metrics: str = option(
        "ex",
        help="Comma-separated: ex (execution match, the score; always computed), em (exact "
        "set match with its partial scores, as the official evaluation.py --etype match; "
        "prints the official tables).",
    )
    tables: Path | None = eo.location(
        "Spider's tables.json for em (default: beside --gold or --db-dir)."
    )
    plug_value: bool = option(
        False,
        help="As the official flag: a prediction also passes when it passes with the "
        "gold's values plugged into its value slots (for models that predict no values).",
        flag="--plug_value",
    )
    keep_distinct: bool = option(
        False,
        help="As the official flag: keep DISTINCT when executing (by default both queries "
        "lose it).",
        flag="--keep_distinct",
    )
    runnable: bool = eo.runnable()


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
    "evaluator": "querybench.evaluation.spider1.evaluate:evaluate_spider1",
    "eval_options": Spider1EvalOptions,
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
            releases="querybench.data.releases:SPIDER1_PARTS",
        )
    ),
)
