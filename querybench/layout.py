"""Where each benchmark's parts sit under a data root: task file, gold, databases, emulation.

Paths are relative to a root of `data.data_roots()`. They are the layouts the official setup
instructions produce (and `data fetch` reproduces); the loaders, the database lookup, `data
fetch`'s "already in place" check and `data status` all read them from here.
"""

from __future__ import annotations

from pathlib import Path

from querybench.data import data_roots, find_root

# benchmark -> its task file, the official place first
TASK_FILES: dict[str, tuple[str, ...]] = {
    "spider2-lite": ("spider2/spider2-lite/spider2-lite.jsonl",),
    "spider2-snow": ("spider2/spider2-snow/spider2-snow.jsonl",),
    "spider2-dbt": ("spider2/spider2-dbt/examples/spider2-dbt.jsonl",),
    "spider2": ("spider2/spider2/examples/spider2.jsonl",),
    "bird": ("bird/dev.json", "bird/dev/dev.json"),
    "bird-dev-20251106": ("bird/dev_20251106.json", "bird/dev_20251106/dev_20251106.json"),
    # mini-dev in a folder of its own (its databases differ from dev's); a flat copy as well
    "bird-mini-dev": ("bird/mini_dev/mini_dev_sqlite.json", "bird/mini_dev_sqlite.json"),
    "bird-train": ("bird/train/train.json", "bird/train.json"),
    "spider1": ("spider1/dev.json",),
}

# benchmark -> its gold folder (Spider 2.0; the other benchmarks carry gold SQL in the task file)
GOLD_DIRS: dict[str, str] = {
    "spider2-lite": "spider2/spider2-lite/evaluation_suite/gold",
    "spider2-snow": "spider2/spider2-snow/evaluation_suite/gold",
    "spider2-dbt": "spider2/spider2-dbt/evaluation_suite/gold",
    "spider2": "spider2/spider2/evaluation_suite/gold",
}

# Spider 2.0 local SQLite databases `<db>.sqlite`: spider2-lite/README.md's folder, then the
# rebuilt copies, then the agentic setting's own folder (spider2/setup.py --local)
SPIDER2_LOCAL_DIRS = (
    "spider2/spider2-lite/resource/databases/spider2-localdb",
    "spider2-lite-local",
    "spider2/spider2/resource/databases/local",
)

# BigQuery / Snowflake emulation files `<db>.duckdb` (`data emulate` builds them)
EMULATION_DIR = "spider2-lite-local"

_BIRD_DEV = (
    "bird/dev_databases/{db}/{db}.sqlite",
    "bird/dev_databases/dev_databases/{db}/{db}.sqlite",  # the inner zip unpacked in place
    "bird/database/{db}/{db}.sqlite",
    "bird/{db}/{db}.sqlite",
)
_SQLITE_FILES: dict[str, tuple[str, ...]] = {
    "bird": _BIRD_DEV,
    "bird-dev-20251106": _BIRD_DEV,  # the revised questions are over dev's databases
    "bird-mini-dev": ("bird/mini_dev/dev_databases/{db}/{db}.sqlite",),
    "bird-train": (
        "bird/train/train_databases/{db}/{db}.sqlite",
        "bird/train/train_databases/train_databases/{db}/{db}.sqlite",
        "bird/train_databases/{db}/{db}.sqlite",
    ),
    "spider1": ("spider1/database/{db}/{db}.sqlite", "spider1/{db}/{db}.sqlite"),
}


def task_file_candidates(benchmark: str) -> tuple[str, ...]:
    return TASK_FILES.get(benchmark, ())


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
