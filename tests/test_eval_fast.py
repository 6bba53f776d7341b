"""The eval fast path parses exactly as typer does, or leaves the line to typer.

Its table is what the typer declarations give; for every command line tried, either the fast
parser declines it or typer, run on the same line, calls the same command body with the same
values (types included); and a whole `eval` run through the console entry point imports no
typer, click or rich yet prints, writes and exits as the typer path does, byte for byte.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from querybench.cli import _root, app, eval_app
from querybench.commands import eval_fast, eval_flags, eval_run
from querybench.commands.eval_fast import parse
from tests.test_eval_fast_path import _database

_ROOT = Path(__file__).resolve().parent.parent


def _flag_table() -> str:
    return eval_fast.flag_table(typer.main.get_command(eval_app))


def test_the_flag_table_is_what_typer_declares() -> None:
    assert _flag_table() == Path(eval_flags.__file__).read_text(encoding="utf-8")
    assert set(eval_flags.COMMANDS) == set(eval_run.COMMANDS)  # every eval command is plain


def test_the_root_is_as_the_fast_path_knows_it() -> None:
    """Its one option is --verbose/-v; its traceback settings are typer's defaults."""
    root = typer.main.get_command(_root)
    flags = [p for p in root.params if not str(p.name).endswith("completion")]
    assert [(p.name, tuple(p.opts)) for p in flags] == [("verbose", eval_fast._VERBOSE)]
    defaults = typer.Typer()
    for setting in ("enable", "show_locals", "short"):
        name = f"pretty_exceptions_{setting}"
        assert getattr(_root, name) == getattr(defaults, name)


def _typer_call(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...] | None:
    """(command, verbose, values) typer hands to the eval body for `argv`, or None: refused."""
    calls: list[tuple[Any, ...]] = []
    verbose: list[bool] = []
    for name in eval_run.COMMANDS:
        body = lambda name=name, **values: calls.append((name, values))  # noqa: E731
        monkeypatch.setitem(eval_run.COMMANDS, name, body)
    monkeypatch.setattr(eval_run, "verbose", lambda: verbose.append(True))
    result = CliRunner().invoke(app, argv)
    if result.exit_code != 0 or not calls:
        return None
    name, values = calls[0]
    return name, bool(verbose), values


def _same(fast: Any, typer_call: tuple[Any, ...]) -> None:
    assert (fast.command, fast.verbose) == typer_call[:2]
    assert fast.values.keys() == typer_call[2].keys()
    for key, value in typer_call[2].items():
        assert repr(fast.values[key]) == repr(value), key
        assert type(fast.values[key]) is type(value), key


BIRD = ["eval", "bird", "--questions", "q.json", "--predictions", "p.json", "--db-dir", "db"]
LINES = [
    BIRD,
    ["-v", *BIRD],
    ["--verbose", *BIRD, "--workers", "1", "--timeout=2.5", "--metrics", "ex,soft_f1"],
    [*BIRD, "--workers", "0"],  # below its min: typer's error
    [*BIRD, "--workers", "007"],
    [*BIRD, "--workers", "-1"],
    [*BIRD, "--workers", "1", "--workers", "2"],  # repeated: typer's (the last wins)
    [*BIRD, "--output"],  # no value
    [*BIRD, "--output", "--workers", "2"],  # typer takes "--workers" as the path
    [*BIRD, "--output="],
    [*BIRD, "--help"],
    [*BIRD, "extra"],
    [*BIRD, "--", "--workers", "2"],
    [*BIRD, "--bogus", "1"],
    [*BIRD, "-w", "1"],
    ["eval", "bird", "--questions", "q.json"],  # required options missing
    ["eval", "bird"],
    ["eval"],
    ["eval", "nosuch", "--predictions", "p"],
    ["eval", "-v", "bird", *BIRD[2:]],
    ["eval", "spider2-lite", "--predictions", "preds"],
    ["eval", "spider2-lite", "--predictions", "preds", "--read-timeout", "0.0001"],
    ["eval", "spider2-lite", "--predictions", "preds", "--max-bytes", "100", "--mode", "sql"],
    ["eval", "spider2-snow", "--predictions=preds", "--timeout", "1e3"],
    ["eval", "spider1", "--gold", "g", "--predictions", "p", "--db-dir", "d"],
    ["eval", "bird-mini-dev", "--predictions", "p", "--dialect", "mysql", "--db-url", "x"],
    ["eval", "spider2-dbt", "--predictions", "p", "--workers", "3"],
    ["eval", "spider2", "--predictions", "p", "--scoring", "strict", "--timeout", "5"],
]


@pytest.mark.parametrize("argv", LINES, ids=" ".join)
def test_a_command_line_parses_as_typer_parses_it(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, expected = parse(argv), _typer_call(argv, monkeypatch)
    if fast is not None:
        assert expected is not None, "the fast path accepted a line typer refuses"
        _same(fast, expected)


def test_the_plain_lines_are_taken() -> None:
    """The fast path does take the lines a user types (else it would be no path at all)."""
    assert parse(BIRD) is not None and parse(["-v", *BIRD]) is not None
    assert parse([*BIRD, "--workers=1", "--timeout", "2.5"]) is not None


VALUES = ["1", "2", "0", "-3", "007", "2.5", "1e3", "", "ex,soft_f1", "x.json", "/no/such", "é"]


@st.composite
def _lines(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(sorted(eval_flags.COMMANDS)))
    words = ["-v"] if draw(st.booleans()) else []
    words += ["eval", command]
    plain = {"int": ["1", "3", "100"], "float": ["0.5", "30", "2.25"], "str": ["ex", "sqlite"]}
    for _ in range(draw(st.integers(0, 5))):  # mostly the command's own options, plain values
        flag = draw(st.sampled_from(eval_flags.COMMANDS[command]))
        option = draw(st.sampled_from([flag.option] * 12 + ["--help", "--bogus", "-v", "--"]))
        odd = draw(st.sampled_from([*VALUES, "--workers", "-x"]))
        value = draw(st.sampled_from([*plain.get(flag.kind, ["p.json", "dir"]) * 2, odd]))
        form = draw(st.sampled_from(["pair", "pair", "equals", "bare"]))
        if form == "pair":
            words += [option, value]
        elif form == "equals":
            words.append(f"{option}={value}")
        else:
            words.append(option)
    required = [f.option for f in eval_flags.COMMANDS[command] if f.required]
    if draw(st.integers(0, 4)):
        for option in required:
            words += [option, draw(st.sampled_from(["q.json", "dir", "dir", "-x"]))]
    return words


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(argv=_lines())
def test_generated_command_lines_parse_as_typer_parses_them(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = parse(argv)
    if fast is None:
        return
    with monkeypatch.context() as patch:
        expected = _typer_call(argv, patch)
    assert expected is not None, "the fast path accepted a line typer refuses"
    _same(fast, expected)


# A whole run through the console entry point, against the typer path (`cli.main`) printing
# through rich, as eval did before `Terminal`.
_PROBE = (
    "import json, sys\n"
    "sys.argv = ['querybench', *json.loads(sys.argv[1])]\n"
    "from querybench.{module} import main\n"
    "code = 0\n"
    "try:\n"
    "    main()\n"
    "except SystemExit as exit:\n"
    "    code = exit.code or 0\n"
    "sys.stdout.flush()\n"
    "loaded = [m for m in ('typer', 'typer._click', 'click', 'rich') if m in sys.modules]\n"
    "print(json.dumps([code, loaded]), file=sys.stderr)\n"
)


def _run(
    module: str, argv: list[str], tmp_path: Path, **variables: str
) -> tuple[str, str, int, list[str]]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(_ROOT), **variables}
    env["QUERYBENCH_CACHE"] = str(tmp_path / "cache")
    script = _PROBE.format(module=module)
    proc = subprocess.run(
        [sys.executable, "-c", script, json.dumps(argv)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,  # short relative paths: the messages fit rich's 80 columns
    )
    *stderr, last = proc.stderr.splitlines(keepends=True)
    code, loaded = json.loads(last)
    return proc.stdout, "".join(stderr), code, loaded


def _bird_inputs(tmp_path: Path) -> list[str]:
    _database(tmp_path)  # db/shop/shop.sqlite
    questions = [
        {"question_id": 0, "db_id": "shop", "SQL": "SELECT name FROM item", "difficulty": "simple"},
        {"question_id": 1, "db_id": "shop", "SQL": "SELECT id FROM item", "difficulty": "moderate"},
    ]
    (tmp_path / "dev.json").write_text(json.dumps(questions))
    predictions = {
        "0": "SELECT name FROM item\t----- bird -----\tshop",
        "1": "SELECT nosuch FROM item\t----- bird -----\tshop",
    }
    (tmp_path / "pred.json").write_text(json.dumps(predictions))
    return ["eval", "bird", "--questions", "dev.json", "--predictions", "pred.json"]


@pytest.mark.parametrize(
    "tail",
    [
        ["--metrics", "ex,soft_f1"],
        ["--workers=1"],
        ["--db-dir", "/nonexistent/databases"],  # exit 2, its message wrapped by rich
    ],
    ids=" ".join,
)
def test_a_plain_eval_runs_without_typer_and_prints_the_same_bytes(
    tmp_path: Path, tail: list[str]
) -> None:
    argv = [*_bird_inputs(tmp_path), "--output", "out.jsonl"]
    if "--db-dir" not in tail:
        argv += ["--db-dir", "db"]
    argv += tail
    fast = _run("_entry", argv, tmp_path)
    written = (tmp_path / "out.jsonl").read_bytes() if "--db-dir" not in tail else b""
    # TTY_COMPATIBLE=0: rich writes plain text, and `Terminal` leaves every line to rich
    typer_path = _run("cli", argv, tmp_path, TTY_COMPATIBLE="0")
    assert typer_path[3] == ["typer", "typer._click", "rich"]  # what it measures against
    assert fast[3] == [] or tail[0] == "--db-dir", fast[3]  # rich only to wrap the error
    assert "typer" not in fast[3]
    assert fast[:3] == typer_path[:3]
    if written:
        assert (tmp_path / "out.jsonl").read_bytes() == written
        assert "BIRD execution match" in fast[0]


def test_help_and_typos_are_typers(tmp_path: Path) -> None:
    for argv in (["eval", "bird", "--help"], ["eval", "bird", "--questions", "q", "--bogus"]):
        fast, typer_path = _run("_entry", argv, tmp_path), _run("cli", argv, tmp_path)
        assert fast == typer_path and "typer" in fast[3]


if __name__ == "__main__":  # `python -m tests.test_eval_fast`: rewrite the flag table
    Path(eval_flags.__file__).write_text(_flag_table(), encoding="utf-8")
    print(f"wrote {eval_flags.__file__}")
