"""The official releases of every benchmark, where each unpacks, and `fetch_benchmark`.

A benchmark is a few parts (task files and gold, databases, ...), each from one official archive
unpacked into the layout its readers use (`layout.py`), as the official setup would: BIRD's
nested `dev_databases.zip` unpacked, mini-dev in a folder of its own, DBT's databases flattened
per task as Spider2's `spider2-dbt/setup.py` does (start databases under `examples/<id>/`,
gold under `evaluation_suite/gold/<id>/`), the lite SQLite files where spider2-lite/README.md
puts them. A part whose files a reader would already find in the target is not fetched again
(`force` redoes it); `--from` takes the archives from a folder by their official names.
`fetch.fetch_benchmark` does the fetching.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from querybench.benchmarks import resolve, specs
from querybench.data.download import Route
from querybench.data.layout import GOLD_DIRS, SPIDER2_LOCAL_DIRS, TASK_FILES
from querybench.errors import QuerybenchError
from querybench.tasks.model import Task

# Spider2 at fixed commits, not a moving branch: lite/snow/DBT as of 2025-11-07 (the MFA
# credential update), and the last commit holding the agentic `spider2/` folder (2025-05-22).
SPIDER2_COMMIT = "e12c5f1e6550a5df88995520c3bf00bbe7bad2d2"
SPIDER2_AGENTIC_COMMIT = "db1d8e1b4c054b8f36d72e118ec2ef62e2f2b9ac"

_DRIVE = "https://drive.usercontent.google.com/download?export=download&confirm=t&id="
_BIRD = "https://bird-bench.oss-cn-beijing.aliyuncs.com/"


@dataclass(frozen=True)
class Archive:
    """One official file: its official name (what `--from` looks for), URL and checksums."""

    file_name: str
    url: str
    sha256: str | None = None
    commit: str | None = None  # a GitHub archive: the commit its zip comment must name
    page: str | None = None  # where a person downloads it by hand (Google Drive's page)
    aliases: tuple[str, ...] = ()  # other names a hand download may have


def _spider2_repo(commit: str) -> Archive:
    return Archive(
        f"Spider2-{commit}.zip",
        f"https://github.com/xlang-ai/Spider2/archive/{commit}.zip",
        commit=commit,
        aliases=("Spider2-main.zip",),
    )


def _drive(name: str, file_id: str, sha256: str | None = None) -> Archive:
    page = f"https://drive.google.com/file/d/{file_id}/view"
    return Archive(name, _DRIVE + file_id, sha256, page=page)


SPIDER2_REPO = _spider2_repo(SPIDER2_COMMIT)
SPIDER2_AGENTIC_REPO = _spider2_repo(SPIDER2_AGENTIC_COMMIT)
LOCAL_SQLITE = _drive(  # spider2-lite/README.md: the 30 local databases (not Hugging Face's 40)
    "local_sqlite.zip",
    "1coEVsCZq-Xvj9p2TnhBFoFTsY-UoYGmG",
    "d56acf7c9d89be4bdf1f4f1281f4a03d91735f1858f6d6d0cfe0f9d562e3a94f",
)
DBT_START = _drive("DBT_start_db.zip", "1N3f7BSWC4foj-V-1C9n8M2XmgV7FOcqL")
DBT_GOLD = _drive("dbt_gold.zip", "1s0USV_iQLo4oe05QqAMnhGGp5jeejCzp")
BIRD_DEV = Archive(
    "dev.zip", _BIRD + "dev.zip", "cdd6d19faeb45a23970b98d3ef6c40a87987c95459c2cf12076897a60cf5a630"
)
BIRD_TRAIN = Archive("train.zip", _BIRD + "train.zip")
BIRD_MINIDEV = Archive(
    "minidev.zip",
    _BIRD + "minidev.zip",
    "cc48ba16838204e4e214512030cb572eeb5f7bcdd999bae4b9b6ff12ec13b92f",
)
BIRD_DEV_20251106 = Archive(  # the dataset hub's file at a fixed dataset commit
    "dev_20251106-00000-of-00001.json",
    "https://huggingface.co/datasets/birdsql/bird_sql_dev_20251106/resolve/"
    "3c11fb193e5439b338e23677fa0aae11e8b85db9/data/dev_20251106-00000-of-00001.json",
    aliases=("dev_20251106.json",),
)
SPIDER1 = _drive(  # the spider_data.zip linked from https://yale-lily.github.io/spider
    "spider_data.zip",
    "1403EGqzIDoHMdQF4c9Bkyl7dZLZ5Wt6J",
    "00636695dabed6b5f4b8328a16b13e069a2f16591d5efcce57660669c85b121b",
)


# --- where members go ------------------------------------------------------------------------


def _prefixes(*mapping: tuple[str, str], drop_top: bool = False) -> Route:
    """Members under an archive prefix go under its folder (the longest prefix wins); the
    rest is left out. `drop_top` first drops the archive's own top folder (`Spider2-<sha>/`,
    `Spider2-main/`), unless the member already starts with a known prefix."""
    table = sorted(
        ((PurePosixPath(a).parts, PurePosixPath(b)) for a, b in mapping),
        key=lambda item: -len(item[0]),
    )
    firsts = {prefix[0] for prefix, _folder in table}

    def route(member: PurePosixPath) -> PurePosixPath | None:
        parts = member.parts
        if drop_top and parts and parts[0] not in firsts:
            parts = parts[1:]
        for prefix, folder in table:
            if parts[: len(prefix)] == prefix and len(parts) > len(prefix):
                return folder.joinpath(*parts[len(prefix) :])
        return None

    return route


def _flat(suffix: str, folder: str) -> Route:
    """Every `*suffix` file, wherever it is in the archive, straight into `folder`."""

    def route(member: PurePosixPath) -> PurePosixPath | None:
        return PurePosixPath(folder, member.name) if member.name.endswith(suffix) else None

    return route


def _per_task(suffix: str, folder: str) -> Route:
    """`<id>/…/<file><suffix>` to `folder/<id>/<file>`: spider2-dbt/setup.py's flattening."""

    def route(member: PurePosixPath) -> PurePosixPath | None:
        if len(member.parts) < 2 or not member.name.endswith(suffix):
            return None
        return PurePosixPath(folder, member.parts[0], member.name)

    return route


def _repository_files(folder: str, *kept: str) -> Route:
    """A GitHub archive's `kept` files and folders (its top folder dropped) under `folder`."""

    def route(member: PurePosixPath) -> PurePosixPath | None:
        parts = member.parts[1:]
        return PurePosixPath(folder, *parts) if parts and parts[0] in kept else None

    return route


def _single(folder: str, name: str) -> Route:
    return lambda member: PurePosixPath(folder, name)


# --- is a part already in place (as a reader would find it)? --------------------------------


def _files(*paths: str) -> Callable[[Path], bool]:
    return lambda root: all((root / p).is_file() for p in paths)


def _any_file(candidates: tuple[str, ...]) -> Callable[[Path], bool]:
    return lambda root: any((root / p).is_file() for p in candidates)


def _databases(benchmark: str) -> Callable[[Path], bool]:
    """Every local task of `benchmark` under `root` finds its SQLite file there."""

    def present(root: Path) -> bool:
        from querybench.tasks import load_tasks
        from querybench.tasks.databases import task_database

        try:
            tasks = load_tasks(benchmark, data_dir=root, with_gold=False)
        except QuerybenchError:
            return False
        local = [t for t in tasks if t.engine == "sqlite"]
        return bool(local) and all(task_database(t, root) is not None for t in local)

    return present


def _dbt_databases(gold: bool) -> Callable[[Path], bool]:
    """Every DBT task has its start database in `examples/<id>/` (or, `gold`, its gold file)."""

    def present(root: Path) -> bool:
        from querybench.tasks import load_tasks

        try:
            tasks = load_tasks("spider2-dbt", data_dir=root, with_gold=gold)
        except QuerybenchError:
            return False
        if not tasks:
            return False
        if gold:  # every gold file an evaluation names is there
            return all(len(t.gold.result_files) == len(_named_gold(t)) for t in tasks)
        examples = root / "spider2" / "spider2-dbt" / "examples"
        return all(any((examples / t.instance_id).glob("*.duckdb")) for t in tasks)

    return present


def _named_gold(task: Task) -> list[str]:
    checks = task.gold.eval_params.get("evaluation", [])
    return [c["parameters"]["gold"] for c in checks if isinstance(c["parameters"].get("gold"), str)]


def _both(*checks: Callable[[Path], bool]) -> Callable[[Path], bool]:
    return lambda root: all(check(root) for check in checks)


def _clear_dbt_databases(folder: str) -> Callable[[Path], None]:
    """setup.py first deletes the `.duckdb` files of every task folder (not bq/ga/local/sf)."""

    def clear(root: Path) -> None:
        base = root / folder
        if not base.is_dir():
            return
        for task_dir in base.iterdir():
            if task_dir.is_dir() and not task_dir.name.startswith(("bq", "ga", "local", "sf")):
                for old in task_dir.rglob("*.duckdb"):
                    old.unlink()

    return clear


@dataclass(frozen=True)
class Part:
    """One piece of a benchmark's data: the archive it comes from and where it unpacks."""

    name: str
    archive: Archive
    route: Route
    present: Callable[[Path], bool]
    folder: str  # what it fills, relative to the root (printed)
    before: Callable[[Path], None] | None = None
    nested: bool = True  # unpack `.zip` members where they land


_LITE = "spider2/spider2-lite"
_DBT = "spider2/spider2-dbt"
REPOSITORY = Part(
    "Spider 2.0 tasks, gold, metadata and documents (lite, snow, DBT projects)",
    SPIDER2_REPO,
    _prefixes(
        ("spider2-lite", _LITE),
        ("spider2-snow", "spider2/spider2-snow"),
        ("spider2-dbt", _DBT),
        drop_top=True,
    ),
    _files(
        *(TASK_FILES[b][0] for b in ("spider2-lite", "spider2-snow", "spider2-dbt")),
        GOLD_DIRS["spider2-lite"] + "/spider2lite_eval.jsonl",
        GOLD_DIRS["spider2-snow"] + "/spider2snow_eval.jsonl",
    ),
    "spider2",
    nested=False,  # the repository's own zips (if any) are materials, not layout
)
_EVAL_CONFIGS = {
    "spider2-lite": "spider2lite_eval.jsonl",
    "spider2-snow": "spider2snow_eval.jsonl",
    "spider2-dbt": "spider2_eval.jsonl",
}


def _repository_for(benchmark: str) -> Part:
    """The repository part as `benchmark` needs it: in place once that benchmark's task file
    and eval config are there (a checkout or an earlier fetch of it), whatever the other
    benchmarks' files."""
    needed = (TASK_FILES[benchmark][0], f"{GOLD_DIRS[benchmark]}/{_EVAL_CONFIGS[benchmark]}")
    return replace(REPOSITORY, present=_files(*needed))


AGENTIC = Part(
    "Spider 2.0 agentic setting (632 tasks, execution contexts, gold)",
    SPIDER2_AGENTIC_REPO,
    _prefixes(("spider2", "spider2/spider2"), drop_top=True),
    _files(TASK_FILES["spider2"][0], GOLD_DIRS["spider2"] + "/spider2_eval.jsonl"),
    "spider2/spider2",
    nested=False,
)
LITE_DATABASES = Part(
    "Spider 2.0-lite local SQLite databases",
    LOCAL_SQLITE,
    _flat(".sqlite", SPIDER2_LOCAL_DIRS[0]),
    _databases("spider2-lite"),
    SPIDER2_LOCAL_DIRS[0],
)
DBT_START_DATABASES = Part(
    "Spider 2.0-DBT start databases",
    DBT_START,
    _per_task(".duckdb", f"{_DBT}/examples"),
    _dbt_databases(gold=False),
    f"{_DBT}/examples",
    before=_clear_dbt_databases(f"{_DBT}/examples"),
)
DBT_GOLD_DATABASES = Part(
    "Spider 2.0-DBT gold databases",
    DBT_GOLD,
    _per_task(".duckdb", GOLD_DIRS["spider2-dbt"]),
    _dbt_databases(gold=True),
    GOLD_DIRS["spider2-dbt"],
    before=_clear_dbt_databases(GOLD_DIRS["spider2-dbt"]),
)
BIRD_DEV_PART = Part(
    "BIRD dev (2024-06-27) questions and databases",
    BIRD_DEV,
    _prefixes(("dev_20240627", "bird"), ("dev", "bird")),  # dev/: the 2023 release's folder
    _both(_files("bird/dev.json"), _databases("bird")),
    "bird",
)
BIRD_DEV_20251106_PART = Part(
    "BIRD dev 2025-11-06 revised questions",
    BIRD_DEV_20251106,
    _single("bird", "dev_20251106.json"),
    _any_file(TASK_FILES["bird-dev-20251106"]),
    "bird",
)
BIRD_TRAIN_PART = Part(
    "BIRD train questions and databases",
    BIRD_TRAIN,
    _prefixes(("train", "bird/train")),
    _both(_files("bird/train/train.json"), _databases("bird-train")),
    "bird/train",
)
BIRD_MINIDEV_PART = Part(
    "BIRD mini-dev (SQLite, MySQL, PostgreSQL) with its own databases",
    BIRD_MINIDEV,
    _prefixes(("minidev/MINIDEV", "bird/mini_dev"), ("minidev", "bird/mini_dev")),
    _both(_files(TASK_FILES["bird-mini-dev"][0]), _databases("bird-mini-dev")),
    "bird/mini_dev",
)
SPIDER1_PART = Part(
    "Spider 1.0 questions and databases",
    SPIDER1,
    _prefixes(("spider_data", "spider1"), ("spider", "spider1")),
    _both(_files("spider1/dev.json"), _databases("spider1")),
    "spider1",
)

SPIDER2_LITE_PARTS = (_repository_for("spider2-lite"), LITE_DATABASES)
SPIDER2_SNOW_PARTS = (_repository_for("spider2-snow"),)
SPIDER2_DBT_PARTS = (_repository_for("spider2-dbt"), DBT_START_DATABASES, DBT_GOLD_DATABASES)
# the agentic setting: its own folder, the lite local databases its Local tasks use, and the
# DBT tasks (the same 68 as spider2-dbt, read from there)
SPIDER2_PARTS = (
    _repository_for("spider2-dbt"),
    AGENTIC,
    LITE_DATABASES,
    DBT_START_DATABASES,
    DBT_GOLD_DATABASES,
)
BIRD_PARTS = (BIRD_DEV_PART,)
BIRD_DEV_20251106_PARTS = (BIRD_DEV_PART, BIRD_DEV_20251106_PART)
BIRD_TRAIN_PARTS = (BIRD_TRAIN_PART,)
BIRD_MINI_DEV_PARTS = (BIRD_MINIDEV_PART,)
SPIDER1_PARTS = (SPIDER1_PART,)

# The Spider 1.0 variants: their question files (and Spider-DK's modified databases) from the
# authors' repositories at fixed commits, over Spider 1.0's databases.
SPIDER_SYN_COMMIT = "0b996a57b7e329c14c300a8fb13661da128a9ddc"
SPIDER_DK_COMMIT = "5e16fa1f8cdbb401f3b55d2afb5a7c7435360590"


def _github(repository: str, commit: str) -> Archive:
    name = repository.rpartition("/")[2]
    url = f"https://github.com/{repository}/archive/{commit}.zip"
    return Archive(f"{name}-{commit}.zip", url, commit=commit, aliases=(f"{name}-main.zip",))


SPIDER_SYN_PART = Part(
    "Spider-Syn questions (Spider 1.0 dev, synonym-substituted)",
    _github("ygan/Spider-Syn", SPIDER_SYN_COMMIT),
    _prefixes(("Spider-Syn", "spider-syn"), drop_top=True),
    _files("spider-syn/dev.json"),
    "spider-syn",
    nested=False,
)
SPIDER_DK_PART = Part(
    "Spider-DK questions, schema file and modified databases",
    _github("ygan/Spider-DK", SPIDER_DK_COMMIT),
    _repository_files("spider-dk", "Spider-DK.json", "tables.json", "database", "LICENSE"),
    _files("spider-dk/Spider-DK.json", "spider-dk/database/new_pets_1/new_pets_1.sqlite"),
    "spider-dk",
    nested=False,
)
SPIDER_SYN_PARTS = (SPIDER1_PART, SPIDER_SYN_PART)
SPIDER_DK_PARTS = (SPIDER1_PART, SPIDER_DK_PART)

# benchmark -> its parts, as its spec names them (`BenchmarkSpec.releases`)
PARTS: dict[str, tuple[Part, ...]] = {
    s.name: resolve(s.releases) for s in specs() if s.releases is not None
}
