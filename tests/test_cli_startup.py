"""The console entry point registers only the command it is given, and shows every command
wherever typer lists them (help, an unknown name)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from querybench.cli import _COMMANDS

_ROOT = Path(__file__).resolve().parent.parent


def _main(*args: str) -> tuple[int, str, dict[str, bool]]:
    """Exit code, output and which command modules were imported, of `main()` with `args`."""
    modules = [module for _, module, *_ in _COMMANDS]
    script = (
        "import json, sys\n"
        "from querybench.cli import main\n"
        f"sys.argv = ['querybench', *{list(args)!r}]\n"
        "code = 0\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exit:\n"
        "    code = exit.code or 0\n"
        f"print(json.dumps([code, {{m: m in sys.modules for m in {modules!r}}}]))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(_ROOT), "COLUMNS": "120", "TERM": "dumb"}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    *output, last = proc.stdout.strip().splitlines()
    code, loaded = json.loads(last)
    return int(code), "\n".join(output) + proc.stderr, loaded


def test_help_lists_every_command() -> None:
    code, output, loaded = _main("--help")
    assert code == 0
    for name, *_ in _COMMANDS:
        assert f" {name} " in output, name
    assert " eval " in output
    assert all(loaded.values())


def test_a_named_command_imports_only_its_own_module() -> None:
    code, output, loaded = _main("tasks", "--help")
    assert code == 0 and "list" in output
    assert [m for m, present in loaded.items() if present] == ["querybench.commands.tasks"]


def test_eval_imports_no_other_command() -> None:
    code, output, loaded = _main("eval", "bird", "--help")
    assert code == 0 and "--questions" in output
    assert not any(loaded.values())


def test_an_unknown_command_is_refused_with_every_command_known() -> None:
    code, output, loaded = _main("tasx")
    assert code == 2
    assert "tasx" in output and "tasks" in output  # typer's "did you mean"
    assert all(loaded.values())


def test_the_console_entry_point_imports_no_cli_until_it_runs() -> None:
    """The forkserver of the query children imports the console script's module: with the
    entry point, that is no typer and no rich."""
    import tomllib

    scripts = tomllib.loads((_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module = scripts["querybench"].split(":")[0]
    script = f"import sys, {module}\nprint('typer' in sys.modules, 'querybench.cli' in sys.modules)"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(_ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.stdout.split() == ["False", "False"], proc.stderr
