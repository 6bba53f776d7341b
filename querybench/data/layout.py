"""Where each benchmark's parts sit under a data root: task file, gold, databases, emulation.

Paths are relative to a root of `data.data_roots()`. They are the layouts the official setup
instructions produce (and `data fetch` reproduces); the loaders, the database lookup, `data
fetch`'s "already in place" check and `data status` all read them from here.
"""

from __future__ import annotations

from pathlib import Path

from querybench.benchmarks import lookup, spec, specs
from querybench.benchmarks.bird import BIRD_PATHS as BIRD_PATHS
from querybench.benchmarks.bird import BirdPaths as BirdPaths
from querybench.data.roots import data_roots, find_root

# BIRD's difficulty levels, in the order of the official tables (here, where the eval's summary
# reads them without importing the task loaders).
BIRD_DIFFICULTIES = ("simple", "moderate", "challenging")

# benchmark -> its task file, the official place first
TASK_FILES: dict[str, tuple[str, ...]] = {s.name: s.task_files for s in specs() if s.task_files}

# benchmark -> its gold folder (Spider 2.0; the other benchmarks carry gold SQL in the task file)
GOLD_DIRS: dict[str, str] = {s.name: s.gold_dir for s in specs() if s.gold_dir is not None}

# the paper's reference plans (`--reference-plan`), lines {"instance_id", "plan"}, in the gold
# folder of the benchmarks the paper gives them for
REFERENCE_PLAN_FILE = "reference_plan.jsonl"
REFERENCE_PLAN_BENCHMARKS = ("spider2-lite", "spider2-snow")

# Spider 2.0 local SQLite databases `<db>.sqlite`: spider2-lite/README.md's folder, then the
# rebuilt copies, then the agentic setting's own folder (spider2/setup.py --local)
SPIDER2_LOCAL_DIRS = tuple(f.removesuffix("/{db}.sqlite") for f in spec("spider2").sqlite_files)

# BigQuery / Snowflake emulation files `<db>.duckdb` (`data emulate` builds them)
EMULATION_DIR = "spider2-lite-local"


# Spider 1.0's gold file (`SQL<TAB>db_id` per line, dev.json's order)
SPIDER1_GOLD = "spider1/dev_gold.sql"


def database_folder(benchmark: str, data_dir: str | Path | None = None) -> Path:
    """The folder of `<db_id>/<db_id>.sqlite` an evaluator of `benchmark` reads: the first of
    its places, in the data roots in order, holding a database; else the first place."""
    roots = data_roots(data_dir)
    places = [root / folder for root in roots for folder in database_folders(benchmark)]
    found = next((p for p in places if next(p.glob("*/*.sqlite"), None) is not None), None)
    return found or places[0]


def task_file_candidates(benchmark: str) -> tuple[str, ...]:
    return TASK_FILES.get(benchmark, ())


def reference_plan_candidates(benchmark: str) -> tuple[str, ...]:
    """Where `benchmark`'s reference plan file may be, relative to a root (none: no plans)."""
    if benchmark not in REFERENCE_PLAN_BENCHMARKS:
        return ()
    return (f"{GOLD_DIRS[benchmark]}/{REFERENCE_PLAN_FILE}",)


def sqlite_candidates(benchmark: str, db: str) -> tuple[str, ...]:
    """Where a local task's SQLite file may be, relative to a root, in lookup order."""
    found = lookup(benchmark)
    templates = found.sqlite_files if found is not None and found.sqlite_files else ()
    return tuple(t.format(db=db) for t in templates or (f"{benchmark}/{{db}}/{{db}}.sqlite",))


def database_folders(benchmark: str) -> tuple[str, ...]:
    """The folders holding `<db>/<db>.sqlite` of `benchmark`, relative to a root, in order."""
    suffix = "/{db}/{db}.sqlite"
    found = lookup(benchmark)
    templates = found.sqlite_files if found is not None else ()
    return tuple(t.removesuffix(suffix) for t in templates if t.endswith(suffix))


def emulation_candidates(db: str) -> tuple[str, ...]:
    return (f"{EMULATION_DIR}/{db}.duckdb",)


def benchmark_root(benchmark: str, data_dir: str | Path | None = None) -> Path:
    """The root holding `benchmark`'s task file (what is read beside it: metadata, documents,
    gold); `data_dir` itself when given; the first root when no root holds it."""
    return find_root(*task_file_candidates(benchmark), roots=data_roots(data_dir))
