"""One vocabulary of error codes: every code a result or run record can carry is an `ErrorCode`
member, spelled once (in `querybench/errors.py`), and producers name the member, not a string."""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path

import pytest

from querybench.errors import DataError, EngineError, ErrorCode, QuerybenchError
from querybench.evaluation import verdict
from querybench.evaluation.record import InstanceResult
from querybench.runs.store import InstanceRecord, RecordStatus

PACKAGE = Path(__file__).resolve().parent.parent / "querybench"
CODES = {code.value for code in ErrorCode}

# String literals equal to a code's value that are not that code (path, value): a word that
# happens to match. This list must only shrink.
NOT_A_CODE = {
    ("engines/bigquery.py", "timeout"),  # matched against an exception's class name
    ("models/openai_compat.py", "timeout"),  # why a request is retried
    ("benchmarks/spider2.py", "timeout"),  # the name of an option (a layout option's)
    ("runs/eval_locations.py", "timeout"),  # the same option, read
    ("runs/manifest.py", "timeout"),  # the same option, read back for the score manifest
    ("runs/outputs.py", "timeout"),  # the same option, recorded for a run's manifest
    ("commands/eval_flags.py", "timeout"),  # the same option, in the eval fast path's table
    ("evaluation/bird/evaluate.py", "gold_error"),  # BIRD's metric, a flag named after the code
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


def _slot_names(tree: ast.Module) -> set[int]:
    """The ids of the string nodes that name attributes in a class's `__slots__`."""
    return {
        id(node)
        for assign in ast.walk(tree)
        if isinstance(assign, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "__slots__" for t in assign.targets)
        for node in ast.walk(assign.value)
    }


def test_codes_are_spelled_once() -> None:
    spelled = sorted(
        (name, node.lineno, node.value)
        for name, tree in _sources()
        if name != "errors.py"
        for slots in [_slot_names(tree)]
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and node.value in CODES
        and (name, node.value) not in NOT_A_CODE
        and id(node) not in slots
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


def test_no_module_keeps_a_second_name_for_a_code() -> None:
    """A code has one name, its member: no module binds `X = ErrorCode.Y` for callers to use."""
    aliases = sorted(
        (name, node.lineno)
        for name, tree in _sources()
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        and isinstance(node.value, ast.Attribute)
        and getattr(node.value.value, "id", "") == "ErrorCode"
    )
    assert aliases == []
    assert not hasattr(verdict, "WRONG_RESULT") and "ErrorCode" not in verdict.__all__


def test_results_and_records_read_back_typed_and_write_the_same_json() -> None:
    line = {"instance_id": "a", "score": 0.0, "error": "gold_error", "message": "m"}
    line |= {"difficulty": None, "engine": None}
    result = InstanceResult.from_json(line)
    assert result.error is ErrorCode.GOLD_ERROR and result.to_json() == line
    assert json.dumps(result.to_json()) == json.dumps(line)
    with pytest.raises(DataError, match="not a scored instance"):
        InstanceResult.from_json({**line, "error": "gold error"})  # no such code

    stored = InstanceRecord("b", RecordStatus.ERROR, ErrorCode.MODEL_ERROR, "HTTP 503").to_json()
    assert (stored["status"], stored["error"]) == ("error", "model_error")
    record = InstanceRecord.from_json(json.loads(json.dumps(stored)))
    assert record.status is RecordStatus.ERROR and record.error is ErrorCode.MODEL_ERROR
    assert not record.ok and InstanceRecord.from_json({"instance_id": "c", "status": "ok"}).ok
    with pytest.raises(ValueError):
        InstanceRecord.from_json({"instance_id": "c", "status": "done"})
