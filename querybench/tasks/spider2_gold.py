"""The Spider 2.0 gold folder: eval config, gold result files and their alternatives, difficulty.

Its layout is task data (a task's gold reference and difficulty come from it); parsing the gold
results for scoring is `evaluation/spider2/gold.py`'s.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from querybench import json_input
from querybench.benchmarks import Benchmark as Name
from querybench.data.layout import GOLD_DIRS, benchmark_root
from querybench.errors import DataError
from querybench.tasks.input_files import plain_name, read_text

Benchmark = str  # spider2-lite or spider2-snow, a registry name (the gold folders read here)

EASY_BELOW, HARD_FROM = 80, 160
_ALTERNATIVE = re.compile(r"^(.+)_[a-z]\.csv$")  # the official `^<id>(_[a-z])?\.csv$`, suffixed


@dataclass(frozen=True)
class EvalSpec:
    """One line of `spider2lite_eval.jsonl` / `spider2snow_eval.jsonl`."""

    instance_id: str
    condition_cols: Any
    ignore_order: bool
    toks: int | None = None
    temporal: bool = False


def engine_family(instance_id: str) -> str:
    """`bq` (BigQuery, incl. `ga`), `sf` (Snowflake) or `local` (SQLite), from the id prefix."""
    for prefix, family in (("bq", "bq"), ("ga", "bq"), ("sf", "sf"), ("local", "local")):
        if instance_id.startswith(prefix):
            return family
    return "other"


def difficulty_from_tokens(toks: int | None) -> str | None:
    if toks is None:
        return None
    return "easy" if toks < EASY_BELOW else "medium" if toks < HARD_FROM else "hard"


def default_gold_dir(benchmark: Benchmark, data_dir: Path | None = None) -> Path:
    """The gold folder beside the benchmark's task file (data.py's roots, or `data_dir`)."""
    return benchmark_root(benchmark, data_dir) / GOLD_DIRS[benchmark]


def eval_file_name(benchmark: Benchmark) -> str:
    """The eval config's file name inside a gold folder."""
    return f"{benchmark.replace('-', '')}_eval.jsonl"  # spider2lite_eval.jsonl, spider2snow_...


class GoldFolder:
    """A gold folder in the official layout: `exec_result/`, `sql/` and the eval config."""

    def __init__(self, gold_dir: str | Path, benchmark: Benchmark) -> None:
        self.dir = Path(gold_dir)
        self.benchmark = benchmark
        config = self.dir / eval_file_name(benchmark)
        if not config.is_file():
            raise DataError(f"gold folder {self.dir} has no {config.name}")
        self.specs = _read_specs(config)
        self._results_dir = self.dir / "exec_result"
        if not self._results_dir.is_dir():
            raise DataError(f"gold folder {self.dir} has no exec_result/ folder")

    @cached_property
    def _result_files(self) -> frozenset[str]:
        return frozenset(p.name for p in self._results_dir.iterdir())

    def result_paths(self, instance_id: str) -> tuple[list[Path], bool]:
        """Gold CSVs of an instance and whether it is the single base file.

        `<id>.csv` alone when it exists; otherwise the sorted alternatives `<id>_a.csv` ...
        (the official rule: alternatives are consulted only without a base file).
        """
        if f"{instance_id}.csv" in self._result_files:
            return [self._results_dir / f"{instance_id}.csv"], True
        names = sorted(self._alternatives.get(instance_id, ()))
        return [self._results_dir / n for n in names], False

    @cached_property
    def _alternatives(self) -> dict[str, list[str]]:
        """`<id>_<letter>.csv` files by instance id, indexed once for the whole folder."""
        out: dict[str, list[str]] = {}
        for name in self._result_files:
            match = _ALTERNATIVE.match(name)
            if match:
                out.setdefault(match.group(1), []).append(name)
        return out

    def gold_sql(self, instance_id: str) -> str | None:
        path = self.dir / "sql" / f"{instance_id}.sql"
        try:
            return read_text(path, "gold SQL", errors="replace") if path.is_file() else None
        except DataError:  # an unreadable gold SQL only costs the difficulty its token count
            return None

    @cached_property
    def _lite_toks(self) -> dict[str, int]:
        """Gold token counts of the lite tasks, for snow, whose config has none.

        Every snow task is a lite task moved to Snowflake (`sf_bq011` is `bq011`, same
        question), so it takes that task's difficulty.
        """
        lite = self.dir.parent.parent.parent / "spider2-lite" / "evaluation_suite" / "gold"
        config = lite / eval_file_name(Name.SPIDER2_LITE)
        if self.benchmark != Name.SPIDER2_SNOW or not config.is_file():
            return {}
        return {i: s.toks for i, s in _read_specs(config).items() if s.toks is not None}

    def difficulty(self, instance_id: str) -> str | None:
        toks = self.specs[instance_id].toks
        if toks is None:
            lite_id = instance_id.removeprefix("sf_")
            toks = self._lite_toks.get(instance_id, self._lite_toks.get(lite_id))
        if toks is None:
            sql = self.gold_sql(instance_id)
            toks = len(sql.split()) if sql is not None else None
        return difficulty_from_tokens(toks)


def _read_specs(path: Path) -> dict[str, EvalSpec]:
    specs: dict[str, EvalSpec] = {}
    for number, line in enumerate(read_text(path, "eval config").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json_input.loads(line)
            if not isinstance(item, dict):
                raise TypeError(f"a JSON {type(item).__name__}, not an object")
            toks = item.get("toks")
            instance_id = item["instance_id"]
            if not isinstance(instance_id, str) or not plain_name(instance_id):
                raise ValueError(f"instance_id {instance_id!r} is not a plain name")  # <id>.csv
            spec = EvalSpec(
                instance_id=instance_id,
                condition_cols=item.get("condition_cols"),
                ignore_order=bool(item.get("ignore_order", False)),
                toks=int(toks) if toks not in (None, "") else None,
                temporal=bool(item.get("temporal", False)),
            )
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, OverflowError) as exc:
            raise DataError(f"{path}:{number}: bad eval config line ({exc})") from exc
        specs[spec.instance_id] = spec
    return specs
