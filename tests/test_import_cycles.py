"""No import loops in the package (SPEC §1): every module's imports, at module level and inside
functions alike, point one way.

An import moved into a function to get past a loop hides the loop from Python at start-up, not
from the design: the two modules still need each other. So this reads every ``import`` statement
with ``ast``, wherever it stands (``TYPE_CHECKING`` blocks too), and finds the modules that reach
each other through them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import ganymede

PACKAGE_DIR = Path(ganymede.__file__).parent
PACKAGE = "ganymede"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(
    tree: ast.Module, importer: str, is_package: bool, known: set[str]
) -> set[str]:
    """The package's modules ``importer`` names in its import statements; ``from x import y``
    counts as an import of ``x.y`` where that is a module, else of ``x``."""
    found: set[str] = set()
    own_package = (importer if is_package else importer.rpartition(".")[0]).split(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = ".".join(own_package[: len(own_package) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if candidate in known else base)
    return {name for name in found if name in known and name != importer}


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(path): path for path in PACKAGE_DIR.rglob("*.py")}
    known = set(paths)
    return {
        name: imported_modules(
            ast.parse(path.read_text(encoding="utf-8"), filename=str(path)),
            name,
            path.name == "__init__.py",
            known,
        )
        for name, path in paths.items()
    }


def strongly_connected(graph: Mapping[str, set[str]]) -> Iterator[list[str]]:
    """Tarjan's components, iteratively: the package is deep enough to matter for recursion."""
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = lowlink[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = lowlink[successor] = counter
                    counter += 1
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    advanced = True
                    break
                if successor in on_stack:
                    lowlink[node] = min(lowlink[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                lowlink[parent] = min(lowlink[parent], lowlink[node])
            if lowlink[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                yield sorted(component)


def cycle_through(graph: Mapping[str, set[str]], component: list[str]) -> list[str]:
    """One loop inside ``component``, from its first module back to it, for the failure."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        node = frontier.pop(0)
        for successor in sorted(graph[node] & members):
            if successor == start:
                return [*paths[node], start]
            if successor not in paths:
                paths[successor] = [*paths[node], successor]
                frontier.append(successor)
    raise AssertionError(f"{component} is not a loop")


def test_the_graph_sees_the_imports_the_package_makes() -> None:
    graph = import_graph()
    assert "ganymede.core.kernel_wire" in graph["ganymede.execute.gateway"]
    assert "ganymede.errors" in graph["ganymede.execute.gateway"]


def test_the_loop_finder_names_a_loop() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    loops = [component for component in strongly_connected(graph) if len(component) > 1]
    assert loops == [["a", "b", "c"]]
    assert cycle_through(graph, loops[0]) == ["a", "b", "c", "a"]


def test_no_module_of_the_package_imports_itself_back() -> None:
    graph = import_graph()
    loops = [
        " -> ".join(cycle_through(graph, component))
        for component in strongly_connected(graph)
        if len(component) > 1
    ]
    assert not loops, "import loops:\n" + "\n".join(loops)
