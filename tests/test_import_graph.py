"""The map is the territory: the package's own import graph, read statically (every `import`,
inside functions and `if TYPE_CHECKING:` blocks too), has no cycle between its layers, no edge
from a lower layer up to a higher one, and no module cycle beyond the allow-list below.

`LAYERS` is the dependency order `docs/architecture.md` draws, bottom first: a module may import
its own layer and the layers below it. Adding a top-level module or subpackage means placing it
here (and in the map). A layer is a subpackage, except in `data` (`SPLIT_PACKAGES`): where data
is looked up sits at the bottom and `data status` above the tasks it reads, so each of its
modules is a layer of its own, `data.<module>`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "querybench"

LAYERS: tuple[frozenset[str], ...] = tuple(
    frozenset(names.split())
    for names in (
        # the foundation: the errors, where data lives, declared options, the registry, the
        # content store, the one JSON decoder, the one file digest, installed versions
        "errors data data.roots declared benchmarks store json_input file_digests tar_checks "
        "versions",
        "data.layout data.credentials data.download",
        "engines",  # a shared service: every layer above may run SQL
        "tasks",
        "data.releases data.status",
        "data.fetch",
        "context",
        "models",
        "agent",
        "evaluation",
        "methods",
        "envs runs",
        "report",
        "commands",
        "cli _entry",  # _entry: the console script's entry point, importing cli when it runs
        "querybench",  # the package's `__init__`: the public names, imported lazily
    )
)

# What each layer imports, exactly: within the order above a layer may reach only these, so a
# new dependency between layers is a decision made here (and in the map), and one no longer
# used is taken out.
DEPENDS: dict[str, frozenset[str]] = {
    layer: frozenset(names.split())
    for layer, names in {
        "errors": "",
        "data": "",  # the package's `__init__`
        "data.roots": "",
        "store": "",
        "json_input": "",
        "file_digests": "errors",
        "tar_checks": "errors",
        "versions": "",
        "benchmarks": "declared errors",
        "declared": "errors",
        "data.layout": "benchmarks data.roots",
        "data.credentials": "data.roots json_input file_digests",
        "data.download": "errors file_digests tar_checks",
        "engines": "data.credentials errors store json_input file_digests",
        "tasks": "benchmarks data.roots errors data.layout engines json_input file_digests",
        "data.releases": "benchmarks errors data.download data.layout tasks",
        "data.status": "benchmarks data.credentials data.roots errors data.layout engines tasks",
        "data.fetch": "data.roots errors data.download file_digests data.releases",
        "context": "benchmarks errors data.layout engines tasks json_input",
        "models": "errors tasks context json_input",
        "agent": "benchmarks declared errors engines tasks context models tar_checks",
        # no context, model or agent
        "evaluation": "benchmarks errors data.layout engines tasks store json_input file_digests "
        "versions",
        "methods": "benchmarks data.roots declared errors data.layout engines tasks context "
        "models agent evaluation json_input",
        "envs": "benchmarks data.roots errors engines tasks context models evaluation methods "
        "store json_input file_digests",
        "runs": "benchmarks data.roots declared errors data.layout engines tasks models "
        "evaluation methods store json_input file_digests versions",
        "report": "benchmarks data.roots errors engines tasks agent evaluation runs json_input "
        "file_digests",
        "commands": "benchmarks data.roots declared errors data.layout engines data.fetch "
        "data.status data.releases tasks json_input context evaluation methods runs report",
        "cli": "benchmarks commands",
        "_entry": "commands cli",
        "querybench": "errors engines tasks evaluation runs",
    }.items()
}

# Module cycles that exist today, each with why; this set must only shrink.
ALLOWED_MODULE_CYCLES: frozenset[frozenset[str]] = frozenset()


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (`from pkg import submodule` is the submodule)."""
    modules = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        targets: list[str] = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                source = ".".join([*base, *([node.module] if node.module else [])])
                for alias in node.names:
                    name = f"{source}.{alias.name}"
                    targets.append(name if name in modules else source)
        resolved = {resolve(t) for t in targets if t.startswith("querybench")}
        graph[module] = {r for r in resolved if r is not None and r != module}
    return graph


def cycles(graph: Mapping[str, Iterable[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


# Packages whose modules sit on layers of their own, each named `<package>.<module>` in LAYERS.
SPLIT_PACKAGES = frozenset({"data"})


def layer_of(module: str) -> str:
    """`querybench.engines.sqlite` -> `engines`; `querybench.data.layout` -> `data.layout` (a
    split package's module); the package itself -> `querybench`."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] in SPLIT_PACKAGES:
        return f"{parts[1]}.{parts[2]}"
    return parts[1] if len(parts) > 1 else parts[0]


def _rank(layer: str) -> int:
    for rank, names in enumerate(LAYERS):
        if layer in names:
            return rank
    raise AssertionError(f"{layer} is on no layer of LAYERS (and docs/architecture.md)")


def _layer_graph(graph: Mapping[str, Iterable[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for module, targets in graph.items():
        out.setdefault(layer_of(module), set()).update(
            layer_of(t) for t in targets if layer_of(t) != layer_of(module)
        )
    return out


def test_the_graph_is_read() -> None:
    graph = import_graph()
    assert "querybench.engines" in graph["querybench.engines.child"]  # a function-level import
    assert "querybench.errors" in graph["querybench.evaluation.verdict"]
    assert "querybench.agent.files" in graph["querybench.agent.loop"]  # `from pkg import mod`


def test_no_cycle_between_layers() -> None:
    assert cycles(_layer_graph(import_graph())) == []


def test_no_layer_imports_a_higher_one() -> None:
    upward = sorted(
        (layer, target)
        for layer, targets in _layer_graph(import_graph()).items()
        for target in targets
        if _rank(target) > _rank(layer)
    )
    assert upward == [], "an import against the dependency order (LAYERS, the map)"


def test_each_layer_imports_what_the_map_says() -> None:
    actual = _layer_graph(import_graph())
    new = sorted((layer, t) for layer, targets in actual.items() for t in targets - _allowed(layer))
    assert new == [], "a new dependency between layers: add it to DEPENDS (and the map)"
    unused = sorted(
        (layer, t) for layer, allowed in DEPENDS.items() for t in allowed - actual.get(layer, set())
    )
    assert unused == [], "a dependency is gone: remove it from DEPENDS"


def test_the_dependency_map_follows_the_order() -> None:
    assert sorted(DEPENDS) == sorted(name for names in LAYERS for name in names)
    upward = sorted(
        (a, b) for a, targets in DEPENDS.items() for b in targets if _rank(b) > _rank(a)
    )
    assert upward == [] and cycles(DEPENDS) == []


def _allowed(layer: str) -> frozenset[str]:
    if layer not in DEPENDS:
        raise AssertionError(f"{layer} is in no entry of DEPENDS (and docs/architecture.md)")
    return DEPENDS[layer]


def test_module_cycles_only_shrink() -> None:
    found = set(cycles(import_graph()))
    assert found - ALLOWED_MODULE_CYCLES == set(), "a new module cycle"
    assert ALLOWED_MODULE_CYCLES - found == set(), "a cycle is gone: remove it from the list"


def test_the_checks_can_fail() -> None:
    """The same functions find the cycles of a made-up graph."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [frozenset("abc")]
    layered = {"querybench.tasks.x": {"querybench.evaluation.y"}, "querybench.evaluation.y": set()}
    assert _layer_graph(layered) == {"tasks": {"evaluation"}, "evaluation": set()}
    assert _rank("evaluation") > _rank("tasks")
    assert layer_of("querybench.data.status") == "data.status"
    assert layer_of("querybench.evaluation.spider2.official") == "evaluation"
    reaching = _layer_graph({"querybench.evaluation.y": {"querybench.context.z"}})
    assert reaching["evaluation"] - _allowed("evaluation") == {"context"}  # below, not declared


def evaluation_modules_reached(start: str) -> set[str]:
    """`start` and every `querybench.evaluation` module it reaches through evaluation modules:
    what a kept verdict's code identity must hash (`verdict_cache`, `bird_run_cache`)."""
    graph = import_graph()
    reached: set[str] = set()
    todo = [start]
    while todo:
        module = todo.pop()
        if module in reached:
            continue
        reached.add(module)
        todo += [m for m in graph.get(module, ()) if m.startswith("querybench.evaluation.")]
    return reached
