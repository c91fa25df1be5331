"""The example's layout stays readable: no import circle, no module over 400 lines.

Read from the source with `ast` (nothing is imported), so it runs without
TensorFlow. Imports inside functions count too: a lazy import that closes a
circle is still a circle for a reader following a sentence through the code.
"""

import ast
import pathlib

import pytest

pytestmark = pytest.mark.backend_independent

ROOT = pathlib.Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "examples" / "nmt"
MAX_LINES = 400


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, pathlib.Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imports(path: pathlib.Path, modules: dict[str, pathlib.Path]) -> set[str]:
    """The example's modules that `path` imports (`from a.b import c` is `a.b.c` if a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        else:
            continue
        for name in names:
            if name in modules:
                found.add(name)
    return found


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of `graph` (its modules in order), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for child in sorted(graph[node]):
            if state.get(child) == 1:
                return [*path[path.index(child) :], child]
            if child not in state:
                found = visit(child, [*path, child])
                if found:
                    return found
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [node])
            if found:
                return found
    return None


def test_the_cycle_finder_finds_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_import_circle_in_the_example():
    modules = _modules()
    assert len(modules) > 30  # the walk found the example
    graph = {
        name: {child for child in _imports(path, modules) if child != name}
        for name, path in modules.items()
    }
    assert _cycle(graph) is None, f"import circle: {' -> '.join(_cycle(graph))}"


def test_no_module_of_the_example_is_over_400_lines():
    long = {
        str(path.relative_to(ROOT)): count
        for path in _modules().values()
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"
