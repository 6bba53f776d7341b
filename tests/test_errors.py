"""Every exception class of the package is defined in `querybench/errors.py`, and its module
docstring draws each one."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import querybench.errors as errors

PACKAGE = Path(__file__).resolve().parent.parent / "querybench"
_BUILTIN = {
    n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)
}


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):  # `duckdb.Error`, `errors.DataError`
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _derives(node: ast.ClassDef, known: set[str]) -> bool:
    names = [_base_name(b) for b in node.bases]
    return any(n in known or n.endswith(("Error", "Exception", "Warning")) for n in names)


def exception_classes(trees: dict[str, ast.AST]) -> dict[str, set[str]]:
    """`{module: class names}` of the classes deriving from an exception, by their bases'
    names, to a fixpoint over every module (a base from a driver: a name ending in Error,
    Exception or Warning)."""
    classes = [
        (module, node)
        for module, tree in trees.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    ]
    known = set(_BUILTIN)
    while not (found := {n.name for _, n in classes if _derives(n, known)}) <= known:
        known |= found
    out: dict[str, set[str]] = {}
    for module, node in classes:
        if _derives(node, known):
            out.setdefault(module, set()).add(node.name)
    return out


def _trees() -> dict[str, ast.AST]:
    return {
        p.relative_to(PACKAGE).as_posix(): ast.parse(p.read_text(encoding="utf-8"), str(p))
        for p in sorted(PACKAGE.rglob("*.py"))
    }


def test_no_exception_class_is_defined_outside_errors() -> None:
    found = exception_classes(_trees())
    outside = {m: sorted(names) for m, names in found.items() if m != "errors.py"}
    assert outside == {}, "define exception classes in querybench/errors.py"


def test_the_docstring_draws_every_exception() -> None:
    defined = exception_classes(_trees())["errors.py"]
    assert len(defined) > 20
    drawn = errors.__doc__ or ""
    assert sorted(n for n in defined if n not in drawn) == []


def test_every_error_is_a_querybench_error() -> None:
    for name in exception_classes(_trees())["errors.py"]:
        kind = getattr(errors, name)
        assert issubclass(kind, errors.QuerybenchError | Warning), name


def test_the_finder_can_fail() -> None:
    source = (
        "class A(ValueError): pass\n"
        "class B(A): pass\n"
        "class C(duckdb.Error): pass\n"
        "class D: pass\n"
        "class E(Base): pass\n"
    )
    assert exception_classes({"m.py": ast.parse(source)}) == {"m.py": {"A", "B", "C"}}
