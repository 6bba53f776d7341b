"""The package's public surface: a deliberate `__all__`, imported lazily, with `py.typed`."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import querybench

ROOT = Path(__file__).resolve().parent.parent


def test_every_public_name_resolves_to_its_definition() -> None:
    from querybench.engines.base import Engine
    from querybench.evaluation.spider2.evaluate import evaluate_spider2
    from querybench.runs.evaluate import evaluate
    from querybench.tasks.model import Task

    for name in querybench.__all__:
        assert getattr(querybench, name) is not None, name
    assert querybench.Engine is Engine and querybench.Task is Task
    assert querybench.evaluate_spider2 is evaluate_spider2
    assert querybench.evaluate is evaluate
    assert set(querybench.__all__) <= set(dir(querybench))


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        querybench.evaluate_everything  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "evaluate_everything" in str(exc)
    else:
        raise AssertionError("no AttributeError")


def test_import_is_cheap() -> None:
    """`import querybench` loads none of the layers (the CLI's start-up pays for each)."""
    code = (
        "import json, sys, querybench; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('querybench'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert json.loads(out.stdout) == ["querybench", "querybench.errors"]


def test_py_typed_ships() -> None:
    assert (ROOT / "querybench" / "py.typed").is_file()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["querybench"]


def test_the_readme_connect_example_opens_the_file_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the guide wrote `connect("sqlite:///db.sqlite")`, which opens /db.sqlite, not ./db.sqlite
    import re
    import sqlite3

    readme = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")  # the README's long part
    found = re.search(r'querybench\.connect\("([^"]+)"\) as db:', readme)
    assert found is not None
    with sqlite3.connect(tmp_path / "db.sqlite") as conn:
        conn.executescript("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2);")
    conn.close()
    monkeypatch.chdir(tmp_path)
    with querybench.connect(found.group(1)) as db:
        assert db.execute("SELECT count(*) FROM t", timeout=5).rows == [(2,)]


def test_the_readme_run_config_example_builds_its_config() -> None:
    # the guide built it flat (`limit=50`), a form the constructor no longer takes
    import re

    readme = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")  # the README's long part
    block = next(b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "RunConfig(" in b)
    setup = block.split("outcome = ")[0]
    namespace: dict[str, object] = {}
    exec(setup, namespace)
    config = namespace["config"]
    assert isinstance(config, querybench.RunConfig) and config.selection.limit == 50


def test_the_guide_typed_options_example_builds_its_options() -> None:
    import re

    from querybench.benchmarks.bird import BirdEvalOptions
    from querybench.runs.evaluate import options_of

    guide = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    found = re.search(r"\"bird\", \"predict.json\", (BirdEvalOptions\(.*\))\)", guide)
    assert found is not None
    options = eval(found.group(1), {"BirdEvalOptions": BirdEvalOptions})  # the guide's call
    assert (options.workers, options.metrics) == (4, "ex,soft_f1")
    changed, _ = options_of("bird", options)
    assert changed == {"workers": 4, "metrics": ["ex", "soft_f1"]}
