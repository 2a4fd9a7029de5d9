"""No import circle anywhere in shared/: each module's imports (at the top, inside functions,
under TYPE_CHECKING: every one counts) make a graph of shared.* modules with no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

SHARED = ROOT / "shared"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path, modules: set[str]) -> set[str]:
    """The shared.* modules ``path`` imports (``from shared.x import y``: ``shared.x.y`` where
    that is a module, else ``shared.x``: a module that takes a name from its own package's
    ``__init__`` depends on it)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    paths = sorted(SHARED.rglob("*.py"))
    modules = {_module_name(path) for path in paths}
    return {_module_name(path): _imported(path, modules) for path in paths}


def cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle of ``graph`` (its modules in order, the first repeated), or []."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node], _ = "open", stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return [*stack[stack.index(target):], target]
            if target not in state and (found := visit(target)):
                return found
        state[node], _ = "done", stack.pop()
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_the_cycle_finder_finds_a_circle_and_only_one():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_the_graph_sees_every_kind_of_import():
    graph = import_graph()
    assert "shared.harness.case" in graph["shared.harness.catalog"]  # from shared.harness.case ...
    assert "shared.harness.kinds" in graph["shared.harness.verdicts"]
    assert graph["shared.harness.case"] >= {"shared.harness.libraries", "shared.hazards"}
    assert len(graph) > 40


def test_no_import_circle_in_shared():
    found = cycle(import_graph())
    assert not found, "import circle: " + " -> ".join(found)
