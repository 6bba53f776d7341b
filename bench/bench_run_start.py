"""What `querybench run` spends reading its tasks before the first instance, in process.

Before: the data-gap line loaded the task file (with its gold) and the run loaded it again.
Now: one load, handed to both. Both paths are timed here on the same data, median of
`--rounds`, CPU time (the machine is shared; wall time follows it).

    .venv/bin/python -m bench.bench_run_start [--rounds 9] [--benchmarks spider1 spider2-lite bird]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from querybench.data.status import benchmark_status
from querybench.tasks import load_tasks


def _cpu_ms(work: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.process_time()
        work()
        times.append(time.process_time() - started)
    return 1000 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--benchmarks", nargs="+", default=["spider1", "spider2-lite", "bird"])
    args = parser.parse_args()
    for benchmark in args.benchmarks:
        load_tasks(benchmark)  # the file in the page cache, the loaders imported

        def twice(benchmark: str = benchmark) -> None:
            benchmark_status(benchmark)
            load_tasks(benchmark, with_gold=False)

        def once(benchmark: str = benchmark) -> None:
            benchmark_status(benchmark, tasks=load_tasks(benchmark, with_gold=False))

        before, after = _cpu_ms(twice, args.rounds), _cpu_ms(once, args.rounds)
        print(f"{benchmark}: {before:.0f} ms -> {after:.0f} ms CPU ({before - after:.0f} ms less)")


if __name__ == "__main__":
    main()
