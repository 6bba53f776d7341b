"""The plain option coercion gives exactly typer's values and errors, without pydantic."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main

from querybench.commands.plain_options import _UNSET, plain_value

_coercion = pytest.importorskip("typer._coercion", reason="typer without its coercion layer")


def _typer_own(annotation: Any, info: Any, value: Any) -> tuple[str, Any]:
    descriptor = _coercion.resolve_type_descriptor(annotation, info)
    param = _coercion.build_runtime_param(descriptor)
    try:
        return "value", param._coerce_value(value, param=None, ctx=None)
    except typer.BadParameter as exc:
        return "error", exc.format_message()


def _plain(annotation: Any, info: Any, value: Any) -> tuple[str, Any]:
    got = plain_value(annotation, info, value)
    return ("value", got) if got is not _UNSET else _typer_own(annotation, info, value)


def _info(**kwargs: Any) -> Any:
    return typer.models.OptionInfo(**kwargs)


CASES = [
    (int, {}, ["0", "7", "42", "007", "-3", "+3", " 4", "1_000", "2.0", "x", 5, 2**70, True]),
    (int, {"min": 1}, ["0", "1", "9", 0, 3]),
    (int, {"max": 10}, ["10", "11"]),
    (float, {}, ["30", "0.5", "1e3", "-1", ".5", "inf", "nan", "x", 30, 2.5, "1.", "00.5"]),
    (float, {"min": 0.1}, ["0", "0.1", "0.05", "3"]),
    (str, {}, ["", "ex,soft_f1", "é", 3]),
    (Path, {}, ["", "relative/x", "/nonexistent/file", "/etc/hostname", "/root", Path("p")]),
    (Path, {"exists": True}, ["/nonexistent/file"]),
]


@pytest.mark.parametrize(
    ("annotation", "flags", "value"),
    [(a, f, v) for a, f, values in CASES for v in values],
    ids=lambda x: repr(x),
)
def test_plain_coercion_is_typers(annotation: Any, flags: dict[str, Any], value: Any) -> None:
    info = _info(**flags)
    expected = _typer_own(annotation, info, value)
    got = _plain(annotation, info, value)
    assert repr(got) == repr(expected)  # repr: a NaN is its own match
    assert type(got[1]) is type(expected[1])


def test_an_unreadable_path_is_typers_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)  # as for a non-root user
    expected = _typer_own(Path, _info(), "/etc/hostname")
    assert expected[0] == "error" and "not readable" in expected[1]
    assert _plain(Path, _info(), "/etc/hostname") == expected


def test_every_eval_option_is_plain_or_handed_to_typer() -> None:
    """Each eval command's default values take the plain path (no pydantic needed)."""
    from querybench.cli import eval_app

    group = typer.main.get_command(eval_app)
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        for param in command.params:
            descriptor = param.type_descriptor
            if param.default is None or descriptor.annotation is bool:
                continue
            got = plain_value(descriptor.annotation, descriptor.parameter_info, param.default)
            assert got == param.default, (name, param.name)


def test_eval_bird_does_not_import_pydantic(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from querybench.cli import main\n"
        "sys.argv = ['querybench', 'eval', 'bird', '--questions', 'q.json', '--predictions',"
        " 'p.json', '--db-dir', 'nowhere', '--workers', '3', '--timeout', '2.5']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exit:\n"
        "    print(exit.code)\n"
        "print('pydantic' in sys.modules)\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    # the command ran (and refused the missing --db-dir with its own message, exit 2)
    assert proc.stdout.split() == ["2", "False"], proc.stdout + proc.stderr
    assert "--db-dir nowhere is not a folder" in proc.stdout + proc.stderr
