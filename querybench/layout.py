"""Where each benchmark's parts sit under a data root: task file, gold, databases, emulation.

Paths are relative to a root of `data.data_roots()`. They are the layouts the official setup
instructions produce (and `data fetch` reproduces); the loaders, the database lookup, `data
fetch`'s "already in place" check and `data status` all read them from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from querybench.data import data_roots, find_root


@dataclass(frozen=True)
class BirdPaths:
    """Where one BIRD split sits under a data root, the official unpacking first: its question
    file (`{dialect}`: mini-dev's sqlite, mysql and postgresql files) and the folders holding
    its `<db_id>/<db_id>.sqlite`. The one table every reader of a data root takes its BIRD
    paths from (`envs/bird_data.py` reads a split folder a trainer names, and says why it keeps
    its own list)."""

    questions: tuple[str, ...]
    databases: tuple[str, ...]

    def question_files(self, dialect: str = "sqlite") -> tuple[str, ...]:
        return tuple(q.format(dialect=dialect) for q in self.questions)


_BIRD_DEV_DATABASES = (
    "bird/dev_databases",
    "bird/dev_databases/dev_databases",  # the inner zip unpacked in place
    "bird/database",
    "bird",  # flat, as this project's data folder keeps dev
)
# BIRD's difficulty levels, in the order of the official tables (here, where the eval's summary
# reads them without importing the task loaders).
BIRD_DIFFICULTIES = ("simple", "moderate", "challenging")

BIRD_PATHS: dict[str, BirdPaths] = {
    "bird": BirdPaths(("bird/dev.json", "bird/dev/dev.json"), _BIRD_DEV_DATABASES),
    "bird-dev-20251106": BirdPaths(  # the revised questions are over dev's databases
        ("bird/dev_20251106.json", "bird/dev_20251106/dev_20251106.json"), _BIRD_DEV_DATABASES
    ),
    # mini-dev in a folder of its own (`data fetch`'s, or the official MINIDEV) with the
    # databases minidev.zip ships; its questions may also sit flat beside dev's. Its databases
    # are never looked for among dev's (the mini-dev README allows dev's original databases
    # for SQLite only; name them with --db-dir)
    "bird-mini-dev": BirdPaths(
        (
            "bird/mini_dev/mini_dev_{dialect}.json",
            "bird/MINIDEV/mini_dev_{dialect}.json",
            "bird/mini_dev_{dialect}.json",
        ),
        ("bird/mini_dev/dev_databases", "bird/MINIDEV/dev_databases"),
    ),
    "bird-train": BirdPaths(
        ("bird/train/train.json", "bird/train.json"),
        (
            "bird/train/train_databases",
            "bird/train/train_databases/train_databases",
            "bird/train_databases",
        ),
    ),
}

# benchmark -> its task file, the official place first
TASK_FILES: dict[str, tuple[str, ...]] = {
    "spider2-lite": ("spider2/spider2-lite/spider2-lite.jsonl",),
    "spider2-snow": ("spider2/spider2-snow/spider2-snow.jsonl",),
    "spider2-dbt": ("spider2/spider2-dbt/examples/spider2-dbt.jsonl",),
    "spider2": ("spider2/spider2/examples/spider2.jsonl",),
    **{benchmark: paths.question_files() for benchmark, paths in BIRD_PATHS.items()},
    "spider1": ("spider1/dev.json",),
}

# benchmark -> its gold folder (Spider 2.0; the other benchmarks carry gold SQL in the task file)
GOLD_DIRS: dict[str, str] = {
    "spider2-lite": "spider2/spider2-lite/evaluation_suite/gold",
    "spider2-snow": "spider2/spider2-snow/evaluation_suite/gold",
    "spider2-dbt": "spider2/spider2-dbt/evaluation_suite/gold",
    "spider2": "spider2/spider2/evaluation_suite/gold",
}

# the paper's reference plans (`--reference-plan`), lines {"instance_id", "plan"}, in the gold
# folder of the benchmarks the paper gives them for
REFERENCE_PLAN_FILE = "reference_plan.jsonl"
REFERENCE_PLAN_BENCHMARKS = ("spider2-lite", "spider2-snow")

# Spider 2.0 local SQLite databases `<db>.sqlite`: spider2-lite/README.md's folder, then the
# rebuilt copies, then the agentic setting's own folder (spider2/setup.py --local)
SPIDER2_LOCAL_DIRS = (
    "spider2/spider2-lite/resource/databases/spider2-localdb",
    "spider2-lite-local",
    "spider2/spider2/resource/databases/local",
)

# BigQuery / Snowflake emulation files `<db>.duckdb` (`data emulate` builds them)
EMULATION_DIR = "spider2-lite-local"

_SQLITE_FILES: dict[str, tuple[str, ...]] = {
    **{
        benchmark: tuple(f"{folder}/{{db}}/{{db}}.sqlite" for folder in paths.databases)
        for benchmark, paths in BIRD_PATHS.items()
    },
    "spider1": ("spider1/database/{db}/{db}.sqlite", "spider1/{db}/{db}.sqlite"),
}


# Spider 1.0's gold file (`SQL<TAB>db_id` per line, dev.json's order) and database folders
SPIDER1_GOLD = "spider1/dev_gold.sql"
_DATABASE_DIRS: dict[str, tuple[str, ...]] = {
    **{benchmark: paths.databases for benchmark, paths in BIRD_PATHS.items()},
    "spider1": ("spider1/database", "spider1"),
}


def database_folder(benchmark: str, data_dir: str | Path | None = None) -> Path:
    """The folder of `<db_id>/<db_id>.sqlite` an evaluator of `benchmark` reads: the first of
    its places, in the data roots in order, holding a database; else the first place."""
    roots = data_roots(data_dir)
    places = [root / folder for root in roots for folder in _DATABASE_DIRS[benchmark]]
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
    if benchmark.startswith("spider2"):
        return tuple(f"{folder}/{db}.sqlite" for folder in SPIDER2_LOCAL_DIRS)
    templates = _SQLITE_FILES.get(benchmark, (f"{benchmark}/{{db}}/{{db}}.sqlite",))
    return tuple(t.format(db=db) for t in templates)


def emulation_candidates(db: str) -> tuple[str, ...]:
    return (f"{EMULATION_DIR}/{db}.duckdb",)


def benchmark_root(benchmark: str, data_dir: str | Path | None = None) -> Path:
    """The root holding `benchmark`'s task file (what is read beside it: metadata, documents,
    gold); `data_dir` itself when given; the first root when no root holds it."""
    return find_root(*task_file_candidates(benchmark), roots=data_roots(data_dir))
