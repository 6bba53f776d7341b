"""One vocabulary of error codes: every code a result or run record can carry is an `ErrorCode`
member, spelled once (in `querybench/errors.py`), and producers name the member, not a string."""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path

import pytest

from querybench.errors import EngineError, ErrorCode, QuerybenchError
from querybench.evaluation import verdict
from querybench.evaluation.record import InstanceResult
from querybench.evaluation.verdict import Verdict

PACKAGE = Path(__file__).resolve().parent.parent / "querybench"
CODES = {code.value for code in ErrorCode}

# String literals equal to a code's value that are not that code (path, value): a word that
# happens to match. This list must only shrink.
NOT_A_CODE = {
    ("engines/bigquery.py", "timeout"),  # matched against an exception's class name
    ("models/openai_compat.py", "timeout"),  # why a request is retried
    ("benchmarks/spider2.py", "timeout"),  # the name of an option (a layout option's)
    ("runs/eval_locations.py", "timeout"),  # the same option, read
    ("commands/eval_flags.py", "timeout"),  # the same option, in the eval fast path's table
    ("engines/sqlite.py", "timeout"),  # an attribute name in a class's __slots__
    ("evaluation/bird.py", "gold_error"),  # BIRD's metric, a flag named after the code
    ("envs/reward_workers.py", "gold_error"),  # the same BIRD metric
}

# Where a code is given: keyword arguments, the constructors' positional slot, class attributes.
_CODE_KEYWORDS = {"error", "code"}
_CODE_POSITION = {"fail": 0, "Verdict": 1, "InstanceResult": 2, "InstanceRecord": 2, "_failed": 1}


def _sources() -> list[tuple[str, ast.Module]]:
    return [
        (path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(), str(path)))
        for path in sorted(PACKAGE.rglob("*.py"))
    ]


def _name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _literal(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def test_codes_are_spelled_once() -> None:
    spelled = sorted(
        (name, node.lineno, node.value)
        for name, tree in _sources()
        if name != "errors.py"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and node.value in CODES
        and (name, node.value) not in NOT_A_CODE
    )
    assert spelled == [], "name the ErrorCode member instead of its string"


def test_producers_give_members_not_strings() -> None:
    given: list[tuple[str, int, str]] = []
    for name, tree in _sources():
        for node in ast.walk(tree):
            values: list[ast.expr | None] = []
            if isinstance(node, ast.Call):
                values += [k.value for k in node.keywords if k.arg in _CODE_KEYWORDS]
                position = _CODE_POSITION.get(_name(node.func))
                if position is not None and len(node.args) > position:
                    values.append(node.args[position])
            elif isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    if isinstance(stmt, ast.Assign | ast.AnnAssign):
                        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                        if any(getattr(t, "id", "") == "code" for t in targets):
                            values.append(stmt.value)
            given += [(name, node.lineno, text) for v in values if (text := _literal(v))]
    assert given == [], "a code is an ErrorCode member (add one there if it is new)"


def _subclasses(cls: type) -> list[type]:
    return [cls, *(s for sub in cls.__subclasses__() for s in _subclasses(sub))]


def test_every_error_class_code_is_a_member() -> None:
    for module in ("querybench.engines.bigquery", "querybench.models.base"):  # codes there too
        importlib.import_module(module)

    classes = [c for c in _subclasses(QuerybenchError) if "code" in vars(c)]
    assert EngineError in classes and len(classes) >= 8
    for cls in classes:
        assert isinstance(vars(cls)["code"], ErrorCode), cls


@pytest.mark.parametrize("code", list(ErrorCode))
def test_json_value_is_the_plain_string(code: ErrorCode) -> None:
    line = json.dumps(InstanceResult("i", 0.0, code, "why").to_json())
    assert json.loads(line)["error"] == code.value
    assert f"{code}" == code.value and code == code.value


def test_old_constants_are_the_members() -> None:
    assert verdict.WRONG_RESULT is ErrorCode.WRONG_RESULT
    assert verdict.SCORER_ERROR is ErrorCode.SCORER_ERROR
    assert Verdict.fail(verdict.GOLD_ERROR).error is ErrorCode.GOLD_ERROR
    assert verdict.ErrorCode is ErrorCode
