"""The score manifest: everything a set of verdicts was decided by, written beside them so that
`querybench verify` can say whether the same score comes out here, and if not, why.

`eval --output FILE` writes `FILE.manifest.json`; `run` writes `RUNDIR/manifest.json`. It holds
the scoring call itself (benchmark, predictions, options: what `verify` runs again), the sha256
of every file that decided a verdict (the task file, gold files, the eval config, prediction
files, each database's bytes), the scorer's code (version, commit, sha256 of the scoring
modules' source), the versions of the libraries a verdict depends on, the timeout policy, the
machine (cores, load at start) and, for a run, the model, endpoint, sampling and prompt hashes.

Files are keyed by the option that named them and their path below it (`gold_dir/exec_result/
x.csv`), never by where they sit on this machine: the same data elsewhere has the same keys.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import hashlib
import importlib
import json
import os
import platform
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from querybench import json_input
from querybench.benchmarks import spec
from querybench.errors import DataError, ErrorCode
from querybench.file_digests import file_sha256
from querybench.tasks.input_files import read_text
from querybench.versions import installed_version

if TYPE_CHECKING:
    from querybench.engines.cache import ResultCache
    from querybench.evaluation.record import InstanceResult

FORMAT = 1
MANIFEST_NAME = "manifest.json"  # in a run folder
SUFFIX = ".manifest.json"  # beside an eval's --output
# The libraries a verdict can depend on (parsing, comparison, the engines).
LIBRARIES = ("pandas", "numpy", "pyarrow", "sqlglot", "duckdb")
# The packages whose source decides a verdict (benchmarks: the declared options, whose defaults
# are the evaluators').
SCORER_PACKAGES = ("querybench.evaluation", "querybench.engines", "querybench.benchmarks")
# What each option names, when it names files.
ROLES = {
    "predictions": "prediction",
    "gold": "gold",
    "gold_dir": "gold",
    "questions": "gold",
    "tasks_file": "tasks",
    "db_dir": "database",
    "records": "prediction",
}
DATABASE_SUFFIXES = (".sqlite", ".sqlite3", ".db", ".duckdb")
# How deep database files sit in a database folder in every benchmark's layout: `<db>.sqlite`
# (Spider 2.0's local databases) or `<db>/<db>.sqlite` (Spider 1.0, BIRD).
DATABASE_DEPTH = 2


@dataclass(frozen=True)
class InputFile:
    """One file that decided verdicts: its sha256, its role, and the instances it belongs to
    (empty: it is shared by all, as a task file or a database)."""

    sha256: str
    role: str
    instances: tuple[str, ...] = ()


@dataclass(frozen=True)
class Machine:
    """Where the verdicts were decided, read when scoring starts."""

    cores: int
    usable_cores: int
    load_at_start: tuple[float, float, float]
    platform: str
    python: str

    @classmethod
    def now(cls) -> Machine:
        try:
            load = os.getloadavg()
        except OSError:
            load = (0.0, 0.0, 0.0)
        return cls(
            cores=os.cpu_count() or 1,
            usable_cores=len(os.sched_getaffinity(0)),
            load_at_start=(round(load[0], 2), round(load[1], 2), round(load[2], 2)),
            platform=platform_name(),
            python=platform.python_version(),
        )


def platform_name() -> str:
    """`platform.platform()`, on Linux without the `uname -p` process it starts for the
    processor's name, which it leaves out when that is the machine's or unknown, as Linux's
    `uname -p` gives it."""
    uname = os.uname()
    if uname.sysname != "Linux":
        return platform.platform()
    libc, version = platform.libc_ver()  # read from the C library: no process
    parts = (uname.sysname, uname.release, uname.machine, "with", libc + version)
    name = "-".join(part.strip() for part in parts if part)
    for char, put in ((" ", "_"), ("/", "-"), ("\\", "-"), (":", "-"), (";", "-"), ('"', "-")):
        name = name.replace(char, put)
    name = name.replace("(", "-").replace(")", "-").replace("unknown", "")
    while "--" in name:
        name = name.replace("--", "-")
    return name.rstrip("-")


@dataclass(frozen=True)
class Manifest:
    kind: str  # "eval" or "run"
    benchmark: str
    predictions: str  # as given (relative to where the command ran), and its absolute path
    predictions_path: str
    options: dict[str, Any]  # the scoring call's options, JSON-coded (`encode`)
    task_set: dict[str, Any]
    inputs: dict[str, InputFile]
    scorer: dict[str, Any]
    libraries: dict[str, str]
    timeout_policy: dict[str, Any] | None
    machine: Machine
    run: dict[str, Any] | None = None
    unavailable: dict[str, str] = field(default_factory=dict)
    format: int = FORMAT

    def to_json(self) -> dict[str, Any]:
        # the inputs (a few thousand) as plain dicts directly: `asdict` would copy them deeply
        out = dataclasses.asdict(dataclasses.replace(self, inputs={}))
        out["inputs"] = {
            k: {"sha256": v.sha256, "role": v.role, "instances": v.instances}
            for k, v in sorted(self.inputs.items())
        }
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Manifest:
        try:
            if data.get("format") != FORMAT:
                raise ValueError(f"format {data.get('format')!r}, not {FORMAT}")
            _check_fields(data)
            inputs = {
                str(k): InputFile(str(v["sha256"]), str(v["role"]), tuple(v["instances"]))
                for k, v in data["inputs"].items()
            }
            machine = Machine(
                **{**data["machine"], "load_at_start": tuple(data["machine"]["load_at_start"])}
            )
            fields = {f.name for f in dataclasses.fields(cls)} - {"inputs", "machine"}
            return cls(**{k: data[k] for k in fields if k in data}, inputs=inputs, machine=machine)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DataError(f"not a querybench manifest ({exc})") from exc

    def write(self, path: Path) -> None:
        """Written beside `path`, then renamed over it: never half a manifest."""
        partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
        partial.write_text(json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n", "utf-8")
        os.replace(partial, path)

    @classmethod
    def read(cls, path: Path) -> Manifest:
        try:
            return cls.from_json(json_input.loads(read_text(path, "manifest", path.parent)))
        except OSError as exc:
            raise DataError(f"cannot read the manifest {path}: {exc.strerror or exc}") from exc
        except ValueError as exc:
            raise DataError(f"{path} is not JSON: {exc}") from exc


# What each field of a manifest must be: a manifest handed over is untrusted, so a field of
# another type is refused by name before anything is hashed or scored.
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "kind": (str,),
    "benchmark": (str,),
    "predictions": (str,),
    "predictions_path": (str,),
    "options": (dict,),
    "task_set": (dict,),
    "inputs": (dict,),
    "scorer": (dict,),
    "libraries": (dict,),
    "timeout_policy": (dict, type(None)),
    "machine": (dict,),
    "run": (dict, type(None)),
    "unavailable": (dict,),
}
KINDS = ("eval", "run")


def _check_fields(data: Mapping[str, Any]) -> None:
    for name, types in _FIELD_TYPES.items():
        if name in data and not isinstance(data[name], types):
            raise ValueError(f"{name} is a {type(data[name]).__name__}")
    if data.get("kind") not in KINDS:
        raise ValueError(f"kind {data.get('kind')!r}, not one of {', '.join(KINDS)}")
    for name in ("libraries", "unavailable"):
        for key, value in data.get(name, {}).items():
            if not isinstance(value, str):
                raise ValueError(f"{name}[{key!r}] is a {type(value).__name__}, not a string")


def manifest_path(output: Path) -> Path:
    """Where the manifest of an eval's results file `output` is written."""
    return output.with_name(output.name + SUFFIX)


def build(
    kind: str,
    benchmark: str,
    predictions: Path,
    options: Mapping[str, Any],
    resolved: Mapping[str, Any],
    instance_ids: Sequence[str],
    machine: Machine,
    *,
    run: dict[str, Any] | None = None,
    extra_files: Mapping[str, Path] | None = None,
    unavailable: Mapping[str, str] | None = None,
    decided: Collection[str] | None = None,
) -> Manifest:
    """The manifest of verdicts on `instance_ids` scored by `evaluate(benchmark, predictions,
    **options)`, whose evaluator got `resolved` (the options with the data layout's locations
    filled in: the files hashed); the files named after an instance are hashed for those of
    `decided` (`deciding_ids`; default all)."""
    located = located_inputs(predictions, resolved, extra_files)
    if not isinstance(located.get("gold"), str | Path | None):  # a Spider 1.0 variant's tasks
        located["gold"] = _task_file(benchmark, options.get("data_dir"))
    return Manifest(
        kind=kind,
        benchmark=benchmark,
        predictions=str(predictions),
        predictions_path=str(predictions.absolute()),
        options=encode(dict(options)),
        task_set={
            "instances": len(instance_ids),
            "ids_sha256": hashlib.sha256("\n".join(instance_ids).encode()).hexdigest(),
        },
        inputs=input_files(located, instance_ids if decided is None else decided),
        scorer=scorer_identity(),
        libraries=library_versions(resolved),
        timeout_policy=policy_of(benchmark, resolved),
        machine=machine,
        run=run,
        unavailable=dict(unavailable or {}),
    )


def located_inputs(
    predictions: Path, resolved: Mapping[str, Any], extra_files: Mapping[str, Path] | None = None
) -> dict[str, Any]:
    """What `input_files` hashes for a call that got `resolved`: the predictions and every
    location the evaluator read; not the database folders of a CSV-results (`exec_result`)
    scoring, which runs no SQL."""
    located = {"predictions": predictions, **resolved, **(extra_files or {})}
    if resolved.get("mode") == "exec_result":
        located.pop("db_dir", None)
    return located


def deciding_ids(results: Iterable[InstanceResult]) -> list[str]:
    """The instances whose verdict read the files named after them: all but those with no
    prediction, whose verdict reads no gold (a 6-file submission's manifest does not hash the
    gold of every task). `eval` and `verify` take the same ones."""
    return [r.instance_id for r in results if r.error is not ErrorCode.MISSING_PREDICTION]


def policy_of(benchmark: str, resolved: Mapping[str, Any]) -> dict[str, Any] | None:
    """The timeout policy of the scoring call (None when it runs no query: Spider 2.0's
    exec_result mode, DBT's databases)."""
    from querybench.engines.timeouts import timeout_policy

    queries = spec(benchmark).runs_queries
    runs_queries = queries == "always" or (
        queries == "in sql mode" and resolved.get("mode") == "sql"
    )
    if not runs_queries:
        return None
    timeout = resolved.get("timeout", _default_timeout(benchmark))
    return timeout_policy(None if timeout is None else float(timeout)).to_json()


def _default_timeout(benchmark: str) -> float | None:
    from querybench.runs.evaluate import _evaluator, _parameters

    parameter = _parameters(_evaluator(benchmark)).get("timeout")
    if parameter is None:
        layout = dict(spec(benchmark).layout_options).get("timeout")
        return float(layout) if isinstance(layout, int | float) else None
    return parameter.default if isinstance(parameter.default, int | float) else None


def _task_file(benchmark: str, data_dir: Any) -> Path | None:
    """The task file a benchmark's tasks were read from (the gold of a Spider 1.0 variant)."""
    from querybench.data.roots import data_roots, find_data

    where = Path(data_dir) if data_dir is not None else None
    return find_data(*spec(benchmark).task_files, roots=data_roots(where))


# --- the files -----------------------------------------------------------------------------


def input_files(
    located: Mapping[str, Any],
    instance_ids: Collection[str],
    databases: Collection[str] | None = None,
) -> dict[str, InputFile]:
    """sha256 of every file under the located options that belongs to a verdict: a named file
    whole; in a gold or predictions folder its top-level files (the eval config, a submission's
    metadata) and those named after an instance; in a database folder the databases where
    every benchmark's layout keeps them (`<db>.sqlite`, `<db>/<db>.sqlite`: `DATABASE_DEPTH`),
    or, given `databases` (the keys a manifest recorded, as `verify` passes them), only those:
    a database folder of `/` is then never walked."""
    from querybench.engines.cache import ResultCache

    ids = set(instance_ids)
    out: dict[str, InputFile] = {}
    cache = ResultCache()  # opened on its first database, once for all of them
    try:
        for name, value in located.items():
            role = ROLES.get(name)
            if role is None or value is None:
                continue
            paths = value if isinstance(value, list | tuple) else [value]
            for i, where in enumerate(paths):
                label = name if len(paths) == 1 else f"{name}[{i}]"
                # a submission's folder: its links out are not followed (the gold's are data)
                folder = (
                    Path(where).resolve() if role == "prediction" and Path(where).is_dir() else None
                )
                for key, path, owners in _files(label, Path(where), role, ids, databases):
                    kind = "eval_config" if role == "gold" and _is_eval_config(path) else role
                    try:
                        if role == "database":
                            digest = _database_digest(path, cache)
                        elif folder is not None and _links_out(path, folder):
                            digest = _link_digest(path)
                        else:
                            digest = file_sha256(path)
                    except OSError as exc:  # gone or swapped (a FIFO) since it was scored
                        digest = f"unreadable: {exc.strerror or exc}"
                    out[key] = InputFile(digest, kind, tuple(sorted(owners)))
        with contextlib.suppress(OSError):  # the hashes read here, for the next manifest
            cache.put_many([])
    finally:
        cache.close()
    return out


def _files(
    label: str,
    where: Path,
    role: str,
    ids: set[str],
    databases: Collection[str] | None = None,
) -> Iterator[tuple[str, Path, set[str]]]:
    if where.is_file():
        yield label, where, set()
        return
    if not where.is_dir():
        return
    if role == "database":
        yield from _databases(label, where, databases)
        return
    # by their parts, which is how paths compare
    for relative in sorted(_file_parts(str(where))):
        owners = {i for part in relative for i in _owners(part, ids)}
        if owners or len(relative) == 1:
            yield f"{label}/{'/'.join(relative)}", where.joinpath(*relative), owners


def _file_parts(top: str) -> list[tuple[str, ...]]:
    """The parts below `top` of every file in it (a link to a file too), not entering linked
    folders or unreadable ones: `rglob("*")`'s files, from the directory entries' own types,
    walked with a list (a submitted folder may nest deeper than the recursion limit)."""
    found: list[tuple[str, ...]] = []
    folders: list[tuple[str, tuple[str, ...]]] = [(top, ())]
    while folders:
        where, parts = folders.pop()
        try:
            entries = list(os.scandir(where))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    folders.append((entry.path, (*parts, entry.name)))
                elif entry.is_file():
                    found.append((*parts, entry.name))
            except OSError:
                continue
    return found


def _databases(
    label: str, where: Path, recorded: Collection[str] | None
) -> Iterator[tuple[str, Path, set[str]]]:
    """The database files of the folder `where`: those `recorded` names (inside the folder,
    within `DATABASE_DEPTH`), else those found at most `DATABASE_DEPTH` levels down, in order."""
    if recorded is not None:
        prefix = f"{label}/"
        relatives = [key[len(prefix) :].split("/") for key in recorded if key.startswith(prefix)]
        candidates = [
            where.joinpath(*parts)
            for parts in relatives
            if len(parts) <= DATABASE_DEPTH and not {"", ".", ".."} & set(parts)
        ]
    else:
        candidates = list(_walk(where, DATABASE_DEPTH))
    depth = len(where.parts)
    for path in sorted(candidates, key=lambda p: p.parts):
        if path.suffix.lower() in DATABASE_SUFFIXES and path.is_file():
            yield f"{label}/{'/'.join(path.parts[depth:])}", path, set()


def _walk(where: Path, levels: int) -> Iterator[Path]:
    """The entries of `where` and of its folders, `levels` deep, no folder link followed and
    an unreadable folder skipped."""
    try:
        entries = list(os.scandir(where))
    except OSError:
        return
    for entry in entries:
        path = Path(entry.path)
        try:
            folder = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if folder:
            if levels > 1:
                yield from _walk(path, levels - 1)
        else:
            yield path


def _owners(part: str, ids: set[str]) -> Iterator[str]:
    """The instances a file or folder name belongs to: `<id>`, `<id>.csv`, `<id>_a.csv`."""
    stem = part.split(".", 1)[0]
    if stem in ids:
        yield stem
        return
    head, sep, _ = stem.rpartition("_")
    while sep:
        if head in ids:
            yield head
            return
        head, sep, _ = head.rpartition("_")


def _links_out(path: Path, folder: Path) -> bool:
    """Whether `path`, found in `folder`, is a link to a file outside it: a submission's link to
    a host file, which scoring refuses, and whose bytes the manifest must not read either."""
    return path.is_symlink() and not path.resolve().is_relative_to(folder)


def _link_digest(path: Path) -> str:
    """sha256 of a link's own text (`readlink`), never of what it points to."""
    return hashlib.sha256(b"link to " + os.fsencode(os.readlink(path))).hexdigest()


def _is_eval_config(path: Path) -> bool:
    return path.suffix == ".jsonl" and "eval" in path.stem


def _database_digest(path: Path, cache: ResultCache) -> str:
    """A database's content state: the result cache's content hash of its bytes (remembered by
    the file's identity there, so a warm eval does not read gigabytes again); for a database
    whose sidecar holds data (a `-wal` not checkpointed), the file's and the sidecars' bytes."""
    from querybench.engines import parse_target
    from querybench.engines.cache import sidecars_with_data
    from querybench.errors import EngineError

    try:
        return cache.fingerprint(path)
    except OSError:
        return file_sha256(path)
    except EngineError:
        digest = hashlib.sha256()
        for part in [path, *sidecars_with_data(parse_target(path))]:
            digest.update(f"{part.name}\0{file_sha256(part)}\n".encode())
        return digest.hexdigest()


# --- the code and the libraries ------------------------------------------------------------


def scorer_identity() -> dict[str, Any]:
    """querybench's version, the checkout's commit when it is one, and the sha256 of the source
    of every module of the scoring packages (read from disk)."""
    import pkgutil

    from querybench.store import add_sources

    modules: list[str] = ["querybench.errors"]
    for package in SCORER_PACKAGES:
        path = importlib.import_module(package).__path__
        # walk_packages: the benchmarks' sub-packages and their modules too
        modules += sorted(m.name for m in pkgutil.walk_packages(path, prefix=f"{package}."))
    digest = hashlib.sha256()
    readable = add_sources(digest, modules)
    return {
        "version": installed_version("querybench"),
        "commit": _commit(),
        "sha256": digest.hexdigest() if readable else None,
        "modules": len(modules),
    }


def _commit() -> str | None:
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    found = head_commit(root)
    if found is not None:
        return found
    import subprocess

    try:  # a layout the files do not say plainly (reftable, a symbolic HEAD elsewhere): git
        done = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


_OBJECT_NAME = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def head_commit(root: Path) -> str | None:
    """The commit HEAD names in the checkout at `root`, read from its files as git keeps them
    (a `.git` folder, or a worktree's `.git` file naming its folder, whose `commondir` holds
    the branches; loose refs, then `packed-refs`), without starting git; None when they do not
    say (then git is asked)."""
    try:
        git_dir = root / ".git"
        if git_dir.is_file():
            pointer = git_dir.read_text(encoding="utf-8").strip()
            if not pointer.startswith("gitdir:"):
                return None
            git_dir = root / pointer.removeprefix("gitdir:").strip()
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
        if not head.startswith("ref:"):
            return head if _OBJECT_NAME.fullmatch(head) else None
        ref = head.removeprefix("ref:").strip()
        common = git_dir
        if (git_dir / "commondir").is_file():
            common = git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()
        for folder in dict.fromkeys((git_dir, common)):
            if (folder / ref).is_file():
                named = (folder / ref).read_text(encoding="utf-8").strip()
                return named if _OBJECT_NAME.fullmatch(named) else None
        if (common / "packed-refs").is_file():
            for line in (common / "packed-refs").read_text(encoding="utf-8").splitlines():
                name, _, packed_ref = line.partition(" ")
                if packed_ref == ref and _OBJECT_NAME.fullmatch(name):
                    return name
    except (OSError, UnicodeDecodeError):
        return None
    return None


def library_versions(resolved: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The installed versions of `LIBRARIES`, SQLite's build, and the server's version when
    the call scores on one (`db_url`)."""
    from querybench.engines.cache import sqlite_build

    out: dict[str, str] = {}
    for name in LIBRARIES:
        out[name] = installed_version(name) or "absent"
    out["sqlite"] = sqlite_build()
    url = (resolved or {}).get("db_url")
    if isinstance(url, str) and url:
        out["server"] = server_version(url)
    return out


def server_version(url: str) -> str:
    """The server's own words for its version (`SELECT version()`), or why there are none."""
    from querybench.engines import connect

    try:
        with connect(url) as engine:
            rows = engine.execute("SELECT version()", timeout=10.0).rows
        return str(rows[0][0]) if rows else "unknown"
    except Exception as exc:  # a manifest says what it could not read
        return f"unknown ({type(exc).__name__})"


# --- options as JSON -----------------------------------------------------------------------


def encode(value: Any) -> Any:
    """An option value as JSON that `decode` turns back into it: paths and frozen dataclasses
    tagged, enums as their value; private options (`_on_query`) and callables left out."""
    if isinstance(value, dict):
        return {
            str(k): encode(v)
            for k, v in value.items()
            if not str(k).startswith("_") and not callable(v) and k != "on_result"
        }
    if isinstance(value, Path):
        return {"$path": str(value.absolute())}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, list | tuple | set | frozenset):
        return [encode(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        kind = type(value)
        return {
            "$dataclass": f"{kind.__module__}:{kind.__qualname__}",
            "fields": {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)},
        }
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return {"$unrecorded": type(value).__name__}


def decode(value: Any) -> Any:
    """The inverse of `encode`; an `$unrecorded` value is `Unrecorded` (left to the layout)."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "$path" in value:
        return Path(value["$path"])
    if "$dataclass" in value:
        module, _, name = str(value["$dataclass"]).partition(":")
        if not module.startswith("querybench."):
            raise DataError(f"manifest names a class outside querybench: {module}")
        kind = getattr(importlib.import_module(module), name)
        return kind(**{k: decode(v) for k, v in value["fields"].items()})
    if "$unrecorded" in value:
        return UNRECORDED
    return {k: decode(v) for k, v in value.items()}


class _Unrecorded:
    def __repr__(self) -> str:
        return "UNRECORDED"


UNRECORDED = _Unrecorded()
