"""The benchmark registry: every name declared once, every reference it holds resolves, and a
benchmark is branched on by name nowhere else in the package (an allow-list that only shrinks
holds the branches not yet moved onto the registry)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from querybench.benchmarks import Benchmark, names, resolve, spec, specs
from querybench.errors import DataError

PACKAGE = Path(__file__).resolve().parent.parent / "querybench"
_PREFIXES = ("spider", "bird")  # `.startswith("bird")`: a family spelled by name


def test_every_name_has_one_spec_in_the_enum_order() -> None:
    assert [s.name for s in specs()] == list(Benchmark)
    assert names() == tuple(b.value for b in Benchmark)
    with pytest.raises(DataError, match=r"unknown benchmark 'spider3'; choose one of spider2-lite"):
        spec("spider3")


@pytest.mark.parametrize("benchmark", list(Benchmark))
def test_every_reference_resolves(benchmark: Benchmark) -> None:
    found = spec(benchmark)
    for field in ("loader", "evaluator", "resolver", "command", "writer"):
        reference = getattr(found, field)
        if reference:
            assert callable(resolve(reference)), f"{benchmark}.{field} = {reference}"
    if found.releases:
        assert all(part.folder for part in resolve(found.releases))
    assert found.evaluable == (benchmark in names(evaluable=True))


def test_reading_the_registry_imports_no_layer_above_it() -> None:
    code = (
        "import sys, querybench.benchmarks as b; list(b.specs()); "
        "print(sorted(m for m in sys.modules if m.startswith('querybench.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = eval(out.stdout)  # a printed list of module names
    assert {m.split(".")[1] for m in loaded} <= {"benchmarks", "declared", "errors"}, loaded


def _branches(tree: ast.AST) -> int:
    """Comparisons against a benchmark's name (`== "bird"`, `in ("spider2-lite", ...)`) and
    `startswith` of a benchmark family's prefix."""
    known = set(names())

    def spelled(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in known
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return any(spelled(e) for e in node.elts)
        return False

    count = 0
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Compare)
            and any(spelled(c) for c in [node.left, *node.comparators])
        ) or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "startswith"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and node.args[0].value.startswith(_PREFIXES)
            and any(n.startswith(node.args[0].value) for n in known)
        ):
            count += 1
    return count


# Branches on a benchmark's name outside the registry, by module: each is still to be moved
# onto a field of its spec. This table must only shrink.
ALLOWED_BRANCHES: dict[str, int] = {}


def branches_by_module() -> Counter[str]:
    found: Counter[str] = Counter()
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith("benchmarks/"):
            continue
        count = _branches(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        if count:
            found[relative] = count
    return found


def test_no_benchmark_branch_outside_the_registry() -> None:
    found = branches_by_module()
    grown = {m: n for m, n in found.items() if n > ALLOWED_BRANCHES.get(m, 0)}
    assert grown == {}, "a benchmark branched on by name: declare it on its spec instead"
    shrunk = {m: (ALLOWED_BRANCHES[m], found.get(m, 0)) for m in ALLOWED_BRANCHES}
    shrunk = {m: pair for m, pair in shrunk.items() if pair[0] != pair[1]}
    assert shrunk == {}, "branches were moved: lower ALLOWED_BRANCHES to (allowed, found)[1]"


def test_the_branch_finder_can_fail() -> None:
    source = (
        'if benchmark == "spider1": pass\n'
        'if b in ("bird", "x"): pass\n'
        'if b.startswith("spider2"): pass\n'
        'if b == "spider-dk-like": pass\n'
        'if b.startswith("spiderman"): pass\n'
    )
    assert _branches(ast.parse(source)) == 3
