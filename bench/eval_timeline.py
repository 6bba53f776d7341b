"""Where the wall time of one `querybench eval spider2-lite|snow` goes, phase by phase.

    python -m bench.eval_timeline -- eval spider2-lite --predictions DIR --gold-dir GOLD \\
        --output out.jsonl

Runs the command in this process, through typer's command (the eval's own functions, not the
fast path's parser), and prints the seconds from this script's start at which each phase
begins: the command line imported, the scoring started, its first and last result, the
summary, results file and manifest (`finish`) done. The interpreter's own start and exit are
the difference between this and `/usr/bin/time` around the same command.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

START = time.perf_counter()


def main(argv: list[str]) -> None:
    import querybench.cli as cli
    from querybench.commands import eval_run
    from querybench.evaluation.spider2 import evaluate as spider2_eval

    marks: dict[str, float] = {"command line imported": time.perf_counter()}

    def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            marks.setdefault(f"{name} called", time.perf_counter())
            result = function(*args, **kwargs)
            if hasattr(result, "__next__"):  # a generator: its results are the phase
                return _items(name, result, marks)
            marks[f"{name} returned"] = time.perf_counter()
            return result

        return wrapper

    spider2_eval._exec_result_mode = timed("scoring", spider2_eval._exec_result_mode)  # type: ignore[method-assign]
    eval_run.finish = timed("finish", eval_run.finish)  # type: ignore[attr-defined]
    sys.argv = ["querybench", *argv]
    with contextlib.suppress(SystemExit):
        cli.main()
    marks["end"] = time.perf_counter()
    for name, at in sorted(marks.items(), key=lambda item: item[1]):
        print(f"{at - START:7.3f} s  {name}", file=sys.stderr)


def _items(name: str, items: Iterator[Any], marks: dict[str, float]) -> Iterator[Any]:
    for item in items:
        marks.setdefault(f"{name}: first result", time.perf_counter())
        yield item
    marks[f"{name}: last result"] = time.perf_counter()


if __name__ == "__main__":
    main([a for a in sys.argv[1:] if a != "--"])
