"""DBT projects in the agent's workspace: the project copied in, its DuckDB file a private copy,
and a dbt installation the sandbox can run.

dbt-core 1.10 (the last series that installs offline) pins libraries below what the rest of
querybench needs, so it usually lives in an environment of its own. `find_dbt` takes the `dbt`
executable named by `QUERYBENCH_DBT`, else the first on `PATH`, and works out what the sandbox
must mount read-only for it to start: the environment's own folder and, when that environment
is a venv of a Python outside the system directories, that Python's installation.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from querybench.agent import files
from querybench.agent.sandbox import SYSTEM_DIRS, Toolchain, sandbox_drops_privileges
from querybench.agent.workspace import Workspace, WorkspaceOptions, make_writable, new_folder
from querybench.benchmarks import lookup
from querybench.engines.isolated import connect_isolated
from querybench.errors import EngineUnavailable
from querybench.tasks.model import Task

ENV_VAR = "QUERYBENCH_DBT"
# Where the start databases of DBT_start_db.zip may sit under spider2/spider2-dbt: beside each
# project, as the official setup.py leaves them, or in the archive's own folder.
START_DB_FOLDERS = ("examples", "DBT_start_db")
# dbt would otherwise phone home (usage statistics, version check) from an offline sandbox.
DBT_ENV = {
    "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
    "DBT_VERSION_CHECK": "false",
    "DBT_USE_COLORS": "false",
}


def find_dbt() -> Toolchain | None:
    """The dbt installation the sandbox can run, or None when there is none."""
    named = os.environ.get(ENV_VAR) or shutil.which("dbt")
    if not named:
        return None
    executable = Path(named).absolute()
    if not executable.is_file():
        return None
    bin_dir = executable.parent
    prefix = bin_dir.parent
    # the environment's scripts name its Python by the path it was made at: a linked
    # environment is mounted at both paths
    real = prefix.resolve()
    mounts = [p for p in dict.fromkeys((prefix, real)) if not _under_system_dirs(p)]
    config = prefix / "pyvenv.cfg"
    if config.is_file():
        home = _venv_home(config)
        if home is not None and not _under_system_dirs(home.parent):
            mounts.append(home.parent)
    return Toolchain(bin_dir, tuple(mounts), tuple(DBT_ENV.items()))


def unreadable_mounts(toolchain: Toolchain) -> list[Path]:
    """Mounts the unprivileged sandbox user could not read (every parent must be searchable)."""
    bad = []
    for mount in toolchain.mounts:
        for path in [mount, *mount.parents]:
            mode = path.stat().st_mode
            if not mode & stat.S_IXOTH or (path == mount and not mode & stat.S_IROTH):
                bad.append(mount)
                break
    return bad


def _venv_home(config: Path) -> Path | None:
    for line in config.read_text(encoding="utf-8", errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            return Path(value.strip())
    return None


def _under_system_dirs(path: Path) -> bool:
    return any(path == Path(d) or Path(d) in path.parents for d in SYSTEM_DIRS)


def is_dbt_task(task: Task) -> bool:
    return (
        ((found := lookup(task.benchmark)) is not None and found.dbt_projects)
        or "project_dir" in task.extra
        or task.extra.get("type") == "DBT"
    )


def source_database(task: Task, data_dir: Path) -> Path | None:
    """The DuckDB file a DBT task starts from: named by the task, inside its project, or where
    `querybench data fetch spider2-dbt` unpacks the start databases."""
    named = task.extra.get("database")
    if named and Path(str(named)).is_file():
        return Path(str(named))
    file = f"{task.db}.duckdb"
    project = task.extra.get("project_dir")
    candidates = [Path(str(project)) / file] if project else []
    dbt_dir = data_dir / "spider2" / "spider2-dbt"
    candidates += [dbt_dir / folder / task.instance_id / file for folder in START_DB_FOLDERS]
    return next((p for p in candidates if p.is_file()), None)


def copy_project(task: Task, data_dir: Path, workspace: Path) -> Path:
    """Copy the task's project (with its `dbt_packages`) and a private copy of its DuckDB file
    into `workspace`; the path of that copy. `EngineUnavailable` when either is missing."""
    project = task.extra.get("project_dir")
    if not project or not Path(str(project)).is_dir():
        raise EngineUnavailable(f"{task.instance_id}: no DBT project folder for this task")
    database = source_database(task, data_dir)
    if database is None:
        raise EngineUnavailable(
            f"{task.instance_id}: the start database {task.db}.duckdb is not here "
            "(`querybench data fetch spider2-dbt` downloads them)"
        )
    shutil.copytree(Path(str(project)), workspace, dirs_exist_ok=True)
    copy = workspace / f"{task.db}.duckdb"
    if not copy.exists():  # copied with the project when it sits there
        shutil.copyfile(database, copy)
    make_writable(workspace)
    return copy


def open_dbt_workspace(task: Task, data_dir: Path, options: WorkspaceOptions) -> Workspace:
    """A workspace holding the task's project and a private copy of its database, with dbt."""
    toolchain = find_dbt()
    if toolchain is None:
        raise EngineUnavailable(
            f"{task.instance_id}: dbt is not installed; install dbt-core~=1.10.0 and "
            f"dbt-duckdb~=1.10.0 (in an environment of their own) and set {ENV_VAR} to its "
            "`dbt` program"
        )
    unreadable = unreadable_mounts(toolchain) if sandbox_drops_privileges() else []
    if unreadable:
        raise EngineUnavailable(
            f"{task.instance_id}: the sandbox user cannot read {unreadable[0]}; install dbt "
            "in an environment every user can read (e.g. one made with /usr/bin/python3)"
        )
    folder = new_folder(task)
    try:
        database = copy_project(task, data_dir, folder)
        engine = connect_isolated(database)  # killable at its timeout, as every agent query
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return Workspace(
        task,
        engine,
        options,
        path=folder,
        toolchain=toolchain,
        # the agent may have replaced the file: only a regular file in the workspace is opened
        reconnect=lambda: connect_isolated(files.regular_file(folder, database.name)),
    )


def save_database(workspace: Workspace, predictions: Path) -> Path:
    """Copy the database the agent left to `predictions/<instance_id>/`, where the DBT scoring
    (`querybench eval spider2-dbt`) reads it; the connection is let go first. A database the
    agent replaced with a link or a special file is refused (`UnsafePath`), never followed."""
    workspace.release_engine()
    name = f"{workspace.task.db}.duckdb"
    folder = predictions / workspace.task.instance_id
    folder.mkdir(parents=True, exist_ok=True)
    for suffix in ("", ".wal"):
        target = folder / (name + suffix)
        target.unlink(missing_ok=True)
        files.copy_out(workspace.path, name + suffix, target)
    return folder / name
