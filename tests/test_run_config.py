"""The run configuration declared once: every declared field is a flag of `querybench run` with
its default, the resume identity is the declared one (a change is refused, naming the field),
method options are typed, and a run folder written by the earlier flat code still resumes with
its config.json and summary.json unchanged."""

from __future__ import annotations

import json
import typing
from collections.abc import Iterator
from dataclasses import Field
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

import querybench
from querybench.agent.options import AgentOptions
from querybench.cli import app
from querybench.declared import UNSET, declared_fields
from querybench.errors import DataError, OptionError
from querybench.methods import METHODS, NoOptions
from querybench.runs.config import (
    Execution,
    RunConfig,
    Sampling,
    Selection,
    check_resume,
    declarations,
)
from querybench.runs.runner import run
from querybench.runs.summary import RunSummary
from tests.test_run_harness import data  # noqa: F401  (the fixture)

# The flags `run` has always had: a public contract, spelled and defaulted as before.
FLAGS = {
    "--method": "zero-shot",
    "--model": "oracle",
    "--base-url": None,
    "--api-key-env": "OPENAI_API_KEY",
    "--n": 1,
    "--temperature": None,
    "--top-p": None,
    "--max-tokens": None,
    "--seed": None,
    "--stop": None,
    "--limit": None,
    "--runnable": False,
    "--ids": None,
    "--workers": 2,
    "--concurrency": 8,
    "--max-requests": None,
    "--timeout": 120.0,
    "--max-retries": 5,
    "--context-budget": 16000,
    "--context-window": None,
    "--constant-sql": None,
    "--prices": None,
    "--cache": True,
    "--path": None,
    "--examples": None,
    "--retry-failed": False,
    "--max-consecutive-failures": 5,
    "--reference-plan": False,
    "--oracle-functions": False,
    "--max-steps": None,
    "--action-timeout": None,
    "--continue-after-timeout": False,
    "--max-observation-chars": None,
    "--unsafe-bash": False,
    "--out": None,
    "--executor": "local",
    "--address": None,
}
# The resume identity as the flat code listed it (`IDENTITY`), the method's options besides.
IDENTITY = {
    "benchmark",
    "method",
    "model",
    "base_url",
    "constant_sql",
    "n",
    "temperature",
    "top_p",
    "max_tokens",
    "seed",
    "stop",
    "context_budget",
    "context_window",
    "task_file",
    "examples",
    "reference_plan",
    "oracle_functions",
}
# config.json as the flat `RunConfig` wrote it (paths filled in by the test).
EARLIER_CONFIG: dict[str, Any] = {
    "benchmark": "spider1",
    "method": "zero-shot",
    "model": "oracle",
    "out": "OUT",
    "base_url": None,
    "api_key_env": "OPENAI_API_KEY",
    "constant_sql": None,
    "n": 1,
    "temperature": None,
    "top_p": None,
    "max_tokens": None,
    "seed": None,
    "stop": ["x"],
    "limit": 2,
    "runnable": False,
    "ids": [],
    "workers": 2,
    "concurrency": 8,
    "max_requests": None,
    "timeout": 120.0,
    "max_retries": 5,
    "context_budget": 16000,
    "context_window": None,
    "prices_file": None,
    "use_cache": True,
    "cache_dir": None,
    "data_dir": "DATA",
    "task_file": None,
    "examples": None,
    "eval_workers": 4,
    "eval_timeout": 30.0,
    "retry_failed": False,
    "max_consecutive_failures": 5,
    "reference_plan": False,
    "oracle_functions": False,
    "extra": {},
    "executor": "local",
    "address": None,
}
SUMMARY_KEYS = [
    "benchmark",
    "method",
    "model",
    "n",
    "score",
    "correct",
    "finished",
    "failed",
    "unavailable",
    "unavailable_reasons",
    "runnable",
    "score_runnable",
    "errors",
    "tokens",
    "cost",
    "requests",
    "cached_replies",
    "truncated",
    "wall_s",
    "official_score",
    "strict_score",
]


def _command() -> Any:
    return typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]


def _method_fields() -> list[tuple[Field[Any], Any]]:
    out = {}
    for entry in METHODS.values():
        for f, spec, kind in declared_fields(entry.options):
            if spec.flags(f.name):
                out[f.name] = (f, kind)
    return list(out.values())


def test_every_declared_option_is_a_flag_of_run_with_its_default() -> None:
    params = {p.name: p for p in _command().params}
    declared = [(f, spec, kind) for f, spec, kind in declarations() if spec.flags(f.name)]
    for f, spec, kind in declared:
        param = params.pop(f.name)
        flags = (spec.flags(f.name) or "").split("/")
        if kind is bool and len(flags) == 1:  # typer's pair
            flags.append("--no-" + flags[0][2:])
        assert [*param.opts, *param.secondary_opts] == flags, f.name
        default = f.default if spec.cli_default is UNSET else spec.cli_default
        assert param.default == (None if default == () else default), f.name
        assert (param.help or "") == spec.help, f.name
    for f, _ in _method_fields():  # a method's own: left out unless given
        param = params.pop(f.name)
        assert param.default in (None, False) and param.opts == ["--" + f.name.replace("_", "-")]
    assert set(params) == {"benchmark", "config_file"}  # `--config`: the command line's own
    text = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"}).output
    for flag in FLAGS:
        assert flag in text, flag


def test_the_flags_keep_their_spelling_and_defaults() -> None:
    params = {p.opts[0]: p for p in _command().params if p.opts[0].startswith("--")}
    assert {flag: params[flag].default for flag in FLAGS} == FLAGS
    assert params["--cache"].secondary_opts == ["--no-cache"]
    assert set(params) == {*FLAGS, "--config"}


def test_the_declared_identity_is_the_earlier_one() -> None:
    declared = {f.name for f, spec, _ in declarations() if spec.identity}
    assert declared == IDENTITY
    agent = {f.name for f, spec, _ in declared_fields(AgentOptions) if spec.identity}
    assert agent == {f.name for f, _, _ in declared_fields(AgentOptions)}


def _another(value: Any, kind: Any, tmp_path: Path) -> Any:
    """A valid value of `kind` that is not `value`."""
    if typing.get_origin(kind) is tuple:
        return ("elsewhere",)
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    kind = args[0] if args else kind
    if kind is bool:
        return not value
    if kind is int:
        return (value or 0) + 3
    if kind is float:
        return (value or 0.0) + 1.5
    if kind is Path:
        return tmp_path / "elsewhere"
    return f"{value or ''}-other"


def _one_changed(base: RunConfig, tmp_path: Path) -> Iterator[tuple[str, bool, RunConfig]]:
    """(field, is it identity, `base` with that one field changed) for every declared field
    but `out`, the method's own options included."""
    flat = base.to_json()
    for f, spec, kind in declarations():
        if f.name == "out":
            continue
        value = _another(flat[f.name], kind, tmp_path)
        if f.name == "method":  # another method with the same kind of options
            value = {"zero-shot": "din-sql", "spider-agent": "tool-agent"}[base.method]
        yield f.name, spec.identity, RunConfig.from_json(flat | {f.name: value})
    for f, spec, kind in declared_fields(type(base.options)):
        value = _another(getattr(base.options, f.name), kind, tmp_path)
        yield f.name, spec.identity, RunConfig.from_json(flat | {"extra": {f.name: value}})


@pytest.mark.parametrize("method", ["zero-shot", "spider-agent"])
def test_changing_an_identity_field_refuses_the_resume_naming_it(
    method: str, tmp_path: Path
) -> None:
    base = RunConfig("spider1", method, "oracle", tmp_path / "run")
    check_resume(base)
    written = (base.out / "config.json").read_text()
    seen = []
    for name, identity, changed in _one_changed(base, tmp_path):
        seen.append(name)
        if identity:
            with pytest.raises(DataError, match=rf"holds another experiment \({name}: "):
                check_resume(changed)
        else:
            check_resume(changed)  # the same experiment, resumed with other settings
            (base.out / "config.json").write_text(written)
    assert len(seen) == len(EARLIER_CONFIG) - 2 + len(declared_fields(type(base.options)))


def _flat(method: str, **values: Any) -> dict[str, Any]:
    """A flat config.json object: the run's four fields and `values`."""
    return {"benchmark": "spider1", "method": method, "model": "oracle", "out": "runs/x"} | values


def test_method_options_are_typed() -> None:
    out = Path("runs/x")
    options = RunConfig.from_json(_flat("spider-agent", extra={"action_timeout": 9}))
    assert options.options == AgentOptions(action_timeout=9.0)
    assert isinstance(options.options.action_timeout, float)
    with pytest.raises(OptionError, match=r"action_timeout: expected float, got 'slow' \(str\)"):
        RunConfig.from_json(_flat("spider-agent", extra={"action_timeout": "slow"}))
    with pytest.raises(OptionError, match=r"max_steps: expected int, got 2\.5"):
        AgentOptions(max_steps=2.5)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=r"unsafe_bash: expected bool, got 1"):
        AgentOptions(unsafe_bash=1)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="max_steps: not an option of zero-shot"):
        RunConfig.from_json(_flat("zero-shot", extra={"max_steps": 3}))
    with pytest.raises(OptionError, match="spider-agent takes AgentOptions, not NoOptions"):
        RunConfig("spider1", "spider-agent", "oracle", out, options=NoOptions())
    with pytest.raises(OptionError, match="workers: expected int, got 'two'"):
        Execution(workers="two")  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="workers: expected int, got 'two'"):
        RunConfig.from_json(_flat("zero-shot", workers="two"))
    with pytest.raises(OptionError, match="no option 'worker'"):
        RunConfig.from_json(_flat("zero-shot", worker=2))
    with pytest.raises(OptionError, match="selection: expected Selection"):
        RunConfig("spider1", "zero-shot", "oracle", out, selection=Execution())  # type: ignore[arg-type]


def test_a_run_is_built_by_concern_and_a_flat_object_only_from_json() -> None:
    """The flat names are config.json's: a keyword of the constructor is a concern, never one
    of its fields, so a field cannot be set in two places."""
    out = Path("runs/x")
    with pytest.raises(TypeError, match="workers"):
        RunConfig("spider1", "zero-shot", "oracle", out, workers=4)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="extra"):
        RunConfig("spider1", "spider-agent", "oracle", out, extra={"max_steps": 3})  # type: ignore[call-arg]
    by_concern = RunConfig("spider1", "zero-shot", "oracle", out, execution=Execution(workers=4))
    assert RunConfig.from_json(_flat("zero-shot", workers=4)) == by_concern
    assert RunConfig.from_json(by_concern.to_json()) == by_concern


def test_a_wrong_option_value_on_the_command_line_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["run", "spider1", "--method", "spider-agent", "--action-timeout", "slow"]
    )
    message = " ".join(result.output.replace("│", " ").split())
    assert result.exit_code == 2
    assert "Invalid value for '--action-timeout': Input should be a valid number" in message


def test_the_library_entry_is_the_run_command(
    data: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert querybench.run is run and querybench.RunConfig is RunConfig
    monkeypatch.setenv("QUERYBENCH_DATA", str(data))
    cli_out, lib_out = tmp_path / "cli", tmp_path / "lib"
    argv = ["run", "spider1", "--limit", "3", "--stop", "x", "--out", str(cli_out)]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    config = RunConfig(
        "spider1",
        "zero-shot",
        "oracle",
        lib_out,
        selection=Selection(limit=3),
        sampling=Sampling(stop=("x",)),
    )
    outcome = querybench.run(config)
    assert outcome.summary.correct == 3 and outcome.summary.n == 3
    for name in ("results.jsonl", "pred.txt"):
        assert (cli_out / name).read_text() == (lib_out / name).read_text()
    cli_summary = json.loads((cli_out / "summary.json").read_text())
    assert cli_summary | {"wall_s": outcome.summary.wall_s} == outcome.summary.to_json()
    cli_config = json.loads((cli_out / "config.json").read_text())
    assert cli_config | {"out": str(lib_out)} == json.loads((lib_out / "config.json").read_text())


def test_a_config_file_gives_the_options_and_a_typed_flag_wins(
    data: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("QUERYBENCH_DATA", str(data))
    runner = CliRunner()
    toml = tmp_path / "run.toml"
    toml.write_text('limit = 3\nstop = ["x"]\neval_workers = 1\nworkers = 1\n')
    out = tmp_path / "run"
    argv = ["run", "spider1", "--config", str(toml), "--limit", "2", "--out", str(out)]
    result = runner.invoke(app, argv)
    assert result.exit_code == 0, result.output
    written = json.loads((out / "config.json").read_text())
    assert (written["limit"], written["stop"], written["eval_workers"]) == (2, ["x"], 1)
    assert written["workers"] == 1 and written["method"] == "zero-shot"
    records = (out / "records.jsonl").read_bytes()
    assert len(records.splitlines()) == 2
    # a run's own config.json is the same experiment again: resumed, nothing run anew
    again = runner.invoke(app, ["run", "spider1", "--config", str(out / "config.json")])
    assert again.exit_code == 0, again.output
    assert (out / "records.jsonl").read_bytes() == records
    wrong = tmp_path / "wrong.toml"
    wrong.write_text('workers = "two"\n')
    refused = runner.invoke(app, ["run", "spider1", "--config", str(wrong)])
    assert refused.exit_code == 2
    assert "workers: expected int, got 'two' (str)" in " ".join(refused.output.split())
    other = runner.invoke(app, ["run", "bird", "--config", str(out / "config.json")])
    assert other.exit_code == 2 and "is a spider1 run, not bird" in other.output


def test_a_run_folder_of_the_earlier_layout_resumes_unchanged(
    data: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    out.mkdir()
    earlier = EARLIER_CONFIG | {"out": str(out), "data_dir": str(data)}
    (out / "config.json").write_text(json.dumps(earlier, indent=2) + "\n")
    record = {"instance_id": "0", "status": "ok", "sql": "SELECT count(*) FROM items"}
    record |= {"replies": ["kept"], "sqls": ["SELECT count(*) FROM items"], "total_s": 0.25}
    (out / "records.jsonl").write_text(json.dumps(record) + "\n")
    config = RunConfig.from_json(earlier)
    assert config == RunConfig(
        "spider1",
        "zero-shot",
        "oracle",
        out,
        selection=Selection(data_dir=data, limit=2),
        sampling=Sampling(stop=("x",)),
    )
    outcome = run(config)
    assert outcome.complete and outcome.records["0"].replies == ("kept",)  # not run again
    assert len((out / "records.jsonl").read_text().splitlines()) == 2
    assert json.loads((out / "config.json").read_text()) == earlier  # keys and values
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary) == SUMMARY_KEYS
    new = outcome.records["1"]
    total = new.prompt_tokens + new.completion_tokens
    assert total > 0  # the labelled oracle counts its prompt
    assert summary == {
        "benchmark": "spider1",
        "method": "zero-shot",
        "model": "oracle",
        "n": 2,
        "score": 1.0,
        "correct": 2,
        "finished": 2,
        "failed": 0,
        "unavailable": 0,
        "unavailable_reasons": {},
        "runnable": 2,
        "score_runnable": 1.0,
        "errors": {},
        "tokens": {
            "prompt": new.prompt_tokens,
            "completion": new.completion_tokens,
            "total": total,
        },
        "cost": 0.0,
        "requests": 1,  # the oracle's one reply, to the instance not recorded before
        "cached_replies": 0,
        "truncated": 0,
        "wall_s": summary["wall_s"],
        "official_score": 1.0,
        "strict_score": 1.0,
    }
    assert RunSummary.from_json(summary) == outcome.summary
    assert outcome.summary.to_json() == summary
    with pytest.raises(DataError, match=r"stop: \['x'\] -> \[\]"):
        run(
            RunConfig(
                "spider1", "zero-shot", "oracle", out, selection=Selection(data_dir=data, limit=2)
            )
        )


def test_a_value_below_the_declared_least_is_refused_off_the_command_line_too(
    tmp_path: Path,
) -> None:
    # `--n 0` is refused by the flag; the same value from a file or a keyword was taken, and
    # every task then failed with an IndexError (n = 0 candidates), exit 0
    out = tmp_path / "run"
    with pytest.raises(OptionError, match=r"n: at least 1, got 0"):
        RunConfig("spider1", "zero-shot", "oracle", out, sampling=Sampling(n=0))
    with pytest.raises(OptionError, match=r"action_timeout: at least 0\.1, got 0\.0"):
        RunConfig.from_json(_flat("spider-agent", extra={"action_timeout": 0}))
    assert (
        RunConfig(
            "spider1", "zero-shot", "oracle", out, selection=Selection(limit=None)
        ).selection.limit
        is None
    )
    toml = tmp_path / "run.toml"
    toml.write_text("workers = 0\n")
    refused = CliRunner().invoke(app, ["run", "spider1", "--config", str(toml), "--out", str(out)])
    assert refused.exit_code == 2
    assert "workers: at least 1, got 0" in " ".join(refused.output.split())
    assert not (out / "records.jsonl").exists()
