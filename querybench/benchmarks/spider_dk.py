"""Spider-DK (Gan, Chen, Purver, EMNLP 2021): 535 Spider 1.0 dev questions rewritten to need
domain knowledge, each with its knowledge type; three databases modified by the authors, the
others Spider 1.0's. Scored as Spider 1.0; `report` adds a table by knowledge type."""

from __future__ import annotations

from querybench.benchmarks.spec import (
    Benchmark,
    BenchmarkSpec,
    Family,
    QuestionFormat,
    ReportGroup,
)
from querybench.benchmarks.spider1 import SPIDER1_DATABASES, spider1_variant

# The paper's knowledge types: 0 none, 1-5 its T1-T5, two digits both (34: T3 and T4).
_TYPES = (
    ("0", "none"),
    *((str(n), f"T{n}") for n in range(1, 6)),
    *((f"{a}{b}", f"T{a}+T{b}") for a in range(1, 6) for b in range(a + 1, 6)),
)

SPECS = (
    spider1_variant(
        BenchmarkSpec(
            name=Benchmark.SPIDER_DK,
            family=Family.SPIDER1,
            title="Spider-DK (535 Spider 1.0 dev questions needing domain knowledge)",
            folder="spider-dk",
            task_files=("spider-dk/Spider-DK.json",),
            # the authors' modified databases first (their README: merge the two folders)
            sqlite_files=("spider-dk/database/{db}/{db}.sqlite", *SPIDER1_DATABASES),
            # difficulty: the official hardness of the gold query on its database's schema
            questions=QuestionFormat(kept=("type",), labels=_TYPES, hardness="query"),
            releases="querybench.data.releases:SPIDER_DK_PARTS",
            report_groups=(ReportGroup("by knowledge type", "type"),),
        )
    ),
)
