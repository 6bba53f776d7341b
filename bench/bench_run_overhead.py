"""Harness overhead per instance of `querybench run` (zero-shot, Spider 1.0 dev).

A scripted OpenAI-compatible server on 127.0.0.1 answers every request at once with the
task's gold SQL, so the time measured is the harness's own: prompt building (schema
introspection, context), HTTP round trip on loopback, record store (fsync per record),
predictions and the official evaluation. Response and gold-result caches start empty.

    .venv/bin/python bench/bench_run_overhead.py [--workers 2] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from querybench.models import OpenAICompatibleModel
from querybench.runs.config import Execution, RunConfig, Selection
from querybench.runs.runner import run
from querybench.tasks import load_tasks
from tests.openai_server import Reply, ScriptedServer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    gold = {t.question.strip(): t.gold.sql for t in load_tasks("spider1")}

    def answer(body: dict[str, Any]) -> Reply:
        question = body["messages"][-1]["content"].rsplit("Question: ", 1)[1]
        return Reply(f"```sql\n{gold[question]}\n```", prompt_tokens=700, completion_tokens=30)

    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(default=answer) as server:
        os.environ["QUERYBENCH_CACHE"] = str(Path(tmp) / "cache")
        out = Path(tmp) / "run"
        config = RunConfig(
            "spider1",
            "zero-shot",
            "scripted",
            out=out,
            execution=Execution(workers=args.workers),
            selection=Selection(limit=args.limit),
        )
        model = OpenAICompatibleModel("scripted", base_url=server.url)
        start = time.perf_counter()
        outcome = run(config, model=model, evaluate=False)
        generate_s = time.perf_counter() - start
        from querybench.runs.outputs import finish_run

        start = time.perf_counter()
        _results, summary = finish_run(config, outcome.tasks, outcome.unavailable, outcome.records)
        evaluate_s = time.perf_counter() - start
        records = outcome.records.values()
        n = len(outcome.tasks)
        report = {
            "n": n,
            "workers": args.workers,
            "score": summary["score"],
            "requests": len(server.requests),
            "generate_s": round(generate_s, 2),
            "evaluate_s": round(evaluate_s, 2),
            "per_instance_ms": round(1000 * (generate_s + evaluate_s) / n, 2),
            "generate_per_instance_ms": round(1000 * generate_s / n, 2),
            "context_ms_mean": round(1000 * sum(r.context_s for r in records) / n, 2),
            "model_ms_mean": round(1000 * sum(r.model_s for r in records) / n, 2),
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
