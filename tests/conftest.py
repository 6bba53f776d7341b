"""Shared fixtures: where the benchmark data is, and skipping (or failing, under CI) without it."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from querybench.data.roots import data_root


def require_data(*parts: str) -> Path:
    """Path under the data root; skip with a reason when absent, fail when CI=true."""
    path = data_root().joinpath(*parts)
    if not path.exists():
        reason = f"benchmark data not found at {path} (set QUERYBENCH_DATA)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def as_new_user(monkeypatch: pytest.MonkeyPatch, home: Path, data: Path | None) -> None:
    """A new user's machine: `QUERYBENCH_DATA=data` (unset for None), empty user data and config
    dirs under `home`, no cloud credentials in the environment, `home` the working folder."""
    if data is None:
        monkeypatch.delenv("QUERYBENCH_DATA", raising=False)
    else:
        monkeypatch.setenv("QUERYBENCH_DATA", str(data))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg-config"))
    monkeypatch.setenv("QUERYBENCH_CACHE", str(home / "cache"))
    for name in list(os.environ):
        if name.startswith("SNOWFLAKE_") or name == "GOOGLE_APPLICATION_CREDENTIALS":
            monkeypatch.delenv(name)
    monkeypatch.chdir(home)


def require_sandbox() -> None:
    """The agent's bubblewrap sandbox works here; skip with the reason, fail when CI=true
    (CI installs bubblewrap: the sandbox tests must run there for real)."""
    from querybench.agent.sandbox import sandbox_available

    if not sandbox_available():
        reason = "bwrap (0.8 or later) is missing or cannot create namespaces here"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Command output is read at a width no line reaches: rich folds a word longer than the
    terminal mid-way, and a test's tmp paths (their length moves with pytest's numbered tmp
    folders) would otherwise land a fold inside the words a test looks for. A test that
    needs a width sets its own."""
    monkeypatch.setenv("COLUMNS", "4000")


_SESSION_CACHE: list[Path] = []


def pytest_configure(config: pytest.Config) -> None:
    """The whole session caches into a fresh folder: no test reads a cache an earlier run (or
    the user's own `~/.cache/querybench`) left warm, and none writes into it."""
    folder = Path(tempfile.mkdtemp(prefix="querybench-test-cache-"))
    _SESSION_CACHE.append(folder)
    os.environ["QUERYBENCH_CACHE"] = str(folder)


def pytest_unconfigure(config: pytest.Config) -> None:
    for folder in _SESSION_CACHE:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture()
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The tiny Spider 1.0-shaped data root of `tests.methods_fixture` under `tmp_path`, with a
    cache of its own (a test module that needs another root defines its own `data`)."""
    from tests.methods_fixture import make_data

    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))
    return make_data(tmp_path / "data")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    """Under CI=true a skipped test is a failure, whatever skipped it (marker, importorskip,
    a skip inside the test): CI must run everything."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if os.environ.get("CI") == "true" and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true: {report.longrepr}"
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> object:
    """A module skipped at import (module-level importorskip / skipif) fails under CI=true."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if os.environ.get("CI") == "true" and report.skipped:
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true: {report.longrepr}"
    return None
