"""Spider-Syn (Gan et al., ACL 2021): the 1,034 Spider 1.0 dev questions with their schema words
replaced by synonyms, over the Spider 1.0 dev databases; scored as Spider 1.0."""

from __future__ import annotations

from querybench.benchmarks.spec import Benchmark, BenchmarkSpec, Family, QuestionFormat
from querybench.benchmarks.spider1 import SPIDER1_DATABASES, spider1_variant

SPECS = (
    spider1_variant(
        BenchmarkSpec(
            name=Benchmark.SPIDER_SYN,
            family=Family.SPIDER1,
            title="Spider-Syn (1,034 Spider 1.0 dev questions, synonym-substituted)",
            folder="spider-syn",
            task_files=("spider-syn/dev.json",),
            sqlite_files=SPIDER1_DATABASES,
            # the questions a model reads are the substituted ones; difficulty is the hardness
            # of the Spider 1.0 item at the same position (the file is in dev's order)
            questions=QuestionFormat(
                question="SpiderSynQuestion", kept=("SpiderQuestion",), hardness="spider1-position"
            ),
            releases="querybench.data.releases:SPIDER_SYN_PARTS",
        )
    ),
)
