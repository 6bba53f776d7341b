"""A user's own task file (YAML or JSONL), on any engine; scored as Spider 1.0 is."""

from __future__ import annotations

from querybench.benchmarks.spec import Benchmark, BenchmarkSpec, Family

SPECS = (
    BenchmarkSpec(
        name=Benchmark.CUSTOM,
        family=Family.CUSTOM,
        title="your own task file (--path)",
        folder="",
        loader="querybench.tasks.custom:load",
        writer="querybench.runs.outputs:score_custom",
    ),
)
