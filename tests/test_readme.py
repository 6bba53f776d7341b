"""The README reads in a minute and runs as written: its first lines are the two commands
(install and the main job; the tests), and every command in its blocks is one the tool
accepts. Each `querybench` line is parsed by the command line itself (flags, values, commands
that exist), the cheap ones run, the Python block runs; the install and test lines are what
`.ci/run` runs (tests/test_ci.py)."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from querybench.cli import app
from tests.conftest import require_data

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
INSTALL = (
    "python3 -m venv .venv && .venv/bin/pip install -e . && "
    ".venv/bin/python -m compileall -q querybench"
)
TESTS = "bash tests/setup.sh && .venv/bin/python -m pytest -q"
# lines that install or set up, run by .ci/run or by a person, never inside the tests
NOT_RUN_HERE = (INSTALL, TESTS, "export OPENAI_API_KEY=...")


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", README, re.S)


def _commands(block: str) -> list[str]:
    """A block's command lines, each without its trailing `# comment`."""
    out = []
    for line in block.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out.append(re.sub(r"\s+#\s.*$", "", line))
    return out


def _parse(argv: list[str]) -> None:
    """Parse `querybench argv` as the command line does, down to the command, without running
    it: an unknown command, flag or bad value raises the parser's usage error."""
    command: Any = typer.main.get_command(app)
    name, args = "querybench", argv
    while True:
        ctx = command.make_context(name, list(args))
        if not hasattr(command, "resolve_command"):
            return
        protected = getattr(ctx, "_protected_args", None) or getattr(ctx, "protected_args", [])
        rest = [*protected, *ctx.args]
        name, command, args = command.resolve_command(ctx, rest)


def test_the_readme_is_short_and_opens_with_the_two_commands() -> None:
    lines = README.splitlines()
    assert len(lines) < 110  # readable in a minute
    first = _commands(_blocks("bash")[0])
    assert first[0] == INSTALL
    assert first[1].startswith(".venv/bin/querybench eval spider2-lite --predictions ")
    assert first[2] == TESTS and len(first) == 3
    # the block comes right after the one-paragraph description
    assert README.index("```bash") < README.index("\n## ")
    for job in (
        "Score a submission",
        "Run a model",
        "Run the agent",
        "Train with the reward",
        "Read the report",
    ):
        assert f"\n## {job}\n" in README
    for link in re.findall(r"\]\((docs/[^)#]+)", README):
        assert (ROOT / link).is_file(), link


def test_every_readme_command_parses() -> None:
    seen = 0
    for block in _blocks("bash"):
        for line in _commands(block):
            if line in NOT_RUN_HERE:
                continue
            if line.startswith("sudo apt-get install"):
                continue
            words = line.split()
            binary = words[0].removeprefix(".venv/bin/")
            assert binary == "querybench", f"a README command the test does not know: {line}"
            _parse(words[1:])
            seen += 1
    assert seen >= 10


def test_the_main_job_runs_as_written(tmp_path: Path) -> None:
    """Run by the shell, with `QUERYBENCH_DATA` set as a newcomer whose data is not beside the
    checkout sets it (the line named `../shared/data`, which only exists beside this one)."""
    sample = ("spider2", "spider2-lite", "evaluation_suite", "example_submission_folder_csv")
    data = require_data(*sample).parents[len(sample) - 1]
    line = _commands(_blocks("bash")[0])[1]
    env = {**os.environ, "QUERYBENCH_DATA": str(data)}
    result = subprocess.run(
        ["bash", "-c", line], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr
    assert "all tasks" in result.stdout


def test_the_cheap_lookup_runs() -> None:
    require_data("spider2", "spider2-lite", "spider2-lite.jsonl")
    line = next(c for b in _blocks("bash") for c in _commands(b) if " data status " in c)
    result = CliRunner().invoke(app, line.split()[1:])
    assert result.exit_code == 0, result.output
    assert "can run here" in result.output


def test_the_python_block_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [block] = _blocks("python")
    with sqlite3.connect(tmp_path / "db.sqlite") as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
    conn.close()
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    exec(block, namespace)
    assert namespace["outcome"].reward == 1.0


def _fake_bin(folder: Path, uid: int) -> Path:
    """A PATH with `id` answering `uid`, an `apt-get` that records its arguments, the shell's
    own tools, and neither bwrap nor chromium."""
    folder.mkdir()
    log = folder / "apt.log"
    (folder / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    (folder / "apt-get").write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    for tool in ("id", "apt-get"):
        (folder / tool).chmod(0o755)
    return log


@pytest.mark.parametrize("uid", [0, 1000])
def test_setup_installs_the_system_packages_as_root_else_names_them(
    tmp_path: Path, uid: int
) -> None:
    log = _fake_bin(tmp_path / "bin", uid)
    env = {"PATH": f"{tmp_path / 'bin'}:/bin:/usr/bin", "SYSTEM_PYTHON": "/nonexistent"}
    script = ROOT / "tests" / "system_packages.sh"
    result = subprocess.run(
        ["/bin/bash", str(script)], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    wanted = {"python3-venv"} | {
        name
        for name, tool in (("bubblewrap", "bwrap"), ("chromium", "chromium"))
        if subprocess.run(["/bin/sh", "-c", f"PATH=/bin:/usr/bin command -v {tool}"]).returncode
    }
    if uid == 0:
        calls = log.read_text().splitlines()
        assert calls[0] == "update -qq"
        assert set(calls[1].split()[3:]) == wanted
    else:
        assert not log.exists()
        assert "sudo apt-get install" in result.stderr and "python3-venv" in result.stderr
    assert "bash tests/system_packages.sh" in (ROOT / "tests" / "setup.sh").read_text()
    assert "sudo apt-get install bubblewrap chromium python3-venv" in " ".join(README.split())


def test_the_docs_a_newcomer_reads_hold_together() -> None:
    docs = ROOT / "docs"
    # every markdown file the docs and the README name is in the repository
    for page in [ROOT / "README.md", *docs.glob("*.md")]:
        for name in re.findall(r"`([A-Za-z_/.-]+\.md)`", page.read_text(encoding="utf-8")):
            top_level = "/" not in name and name.removesuffix(".md").isupper()  # e.g. README.md
            if top_level or name.startswith(("environments/", "docs/")):
                assert (ROOT / name).is_file() or (docs / name).is_file(), (page.name, name)
    # a Ray head with token auth: the joining node needs RAY_AUTH_MODE=token
    assert "RAY_AUTH_MODE=token" in (docs / "scaling.md").read_text(encoding="utf-8")
    # one current `querybench --help` figure, the at-a-glance one
    glance = [
        line
        for line in (docs / "benchmarks.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("| `querybench --help` |")
    ]
    assert len(glance) == 1 and "the one figure for it" in glance[0]
