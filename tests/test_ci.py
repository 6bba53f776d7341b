"""CI checks what the guide promises: `.ci/run` runs `.ci/check` (ruff check, ruff format
--check, mypy --strict) before exactly the README's test command, and `.ci/check` fails on a
finding of any of the three."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECKED = "querybench tests bench"


def _commands(text: str) -> list[str]:
    """A script's command lines, comments and blank lines left out."""
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _script(name: str) -> list[str]:
    return _commands((ROOT / ".ci" / name).read_text(encoding="utf-8"))


def _readme_test_command() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = re.search(r"```bash\n(.*?)```", readme, re.S)
    assert first_block is not None
    commands = [line for line in _commands(first_block.group(1)) if "pytest" in line]
    assert len(commands) == 1, commands
    return commands[0]


def test_ci_run_checks_then_runs_exactly_the_readme_test_command() -> None:
    commands = _script("run")
    test_command = _readme_test_command()
    assert test_command == "bash tests/setup.sh && .venv/bin/python -m pytest -q"
    assert commands.count(test_command) == 1  # the README's line, verbatim, once
    assert commands.count(".ci/check") == 1  # not `|| true`, not under `set +e`
    check, tests = commands.index(".ci/check"), commands.index(test_command)
    assert check < tests
    assert "set +e" not in commands[:check] and "set -euo pipefail" in commands[:check]


def test_ci_check_runs_the_three_tools_on_the_guides_paths() -> None:
    commands = " ".join(_script("check"))
    assert f".venv/bin/ruff check {CHECKED}" in commands
    assert f".venv/bin/ruff format --check {CHECKED}" in commands
    assert ".venv/bin/mypy --strict querybench" in commands


def _tool(name: str) -> Path:
    path = Path(sys.prefix) / "bin" / name
    if not path.exists():
        pytest.skip(f"{name} is not installed in this environment (the dev extra)")
    return path


def _checkout(tmp_path: Path, module: str) -> Path:
    """A checkout holding `.ci/check`, the project's tool settings, this environment as its
    .venv and a package of one module."""
    for tool in ("ruff", "mypy"):
        _tool(tool)
    root = tmp_path / "checkout"
    (root / ".ci").mkdir(parents=True)
    shutil.copy2(ROOT / ".ci" / "check", root / ".ci" / "check")
    shutil.copy2(ROOT / "pyproject.toml", root / "pyproject.toml")
    (root / ".venv").symlink_to(sys.prefix)
    for folder in ("querybench", "tests", "bench"):
        (root / folder).mkdir()
        (root / folder / "__init__.py").write_text("")
    (root / "querybench" / "module.py").write_text(module)
    return root


def _check(root: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MYPY", "RUFF"))}
    return subprocess.run(
        [str(root / ".ci" / "check")], capture_output=True, text=True, env=env, timeout=600
    )


CLEAN = '''"""A module the three tools accept."""


def double(value: int) -> int:
    return 2 * value
'''


def test_ci_check_passes_a_clean_tree(tmp_path: Path) -> None:
    result = _check(_checkout(tmp_path, CLEAN))
    assert result.returncode == 0, result.stdout + result.stderr


def test_ci_check_fails_on_each_tools_finding_and_names_them_all(tmp_path: Path) -> None:
    # an unused import (ruff check), a line ruff would reformat, a str returned as an int (mypy)
    module = CLEAN.replace('"""\n', '"""\n\nimport os\n', 1) + "\n\ndef name( ) -> int:\n"
    module += '    return "x"\n'
    result = _check(_checkout(tmp_path, module))
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "F401" in output  # `os` imported but unused
    assert "1 file would be reformatted" in output
    assert 'Incompatible return value type (got "str", expected "int")' in output
    assert "checks failed: ruff-check ruff-format mypy" in output
