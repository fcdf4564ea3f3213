"""No two modules import each other, directly or in a circle (DESIGN.md): a circle means one of
them holds two jobs. Every import counts, those inside functions too; only the imports under
``if TYPE_CHECKING:`` do not, since they never run."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

KNOWN: dict[frozenset[str], str] = {
    frozenset(
        {
            "hermes_core.host",
            "hermes_core.loop.agent",
            "hermes_core.loop.settings",
            "hermes_core.loop.tool_context",
        }
    ): "Host.agent() builds an Agent and Agent.from_config() builds a Host; DESIGN.md names both "
    "as the embedding API",
}
"""Circles still in the code, each with why it is there; fixing one means removing its entry
(the test fails while an entry names a circle that is gone)."""


def _packages() -> dict[str, Path]:
    """Every module of every distribution in the repository (tests left out), by name."""
    modules: dict[str, Path] = {}
    for project in ROOT.rglob("pyproject.toml"):
        dist = project.parent
        if ".venv" in dist.parts or ".tox" in dist.parts:
            continue
        for package in dist.iterdir():
            if not (package / "__init__.py").is_file() or package.name == "tests":
                continue
            for path in package.rglob("*.py"):
                if "tests" in path.relative_to(package).parts:
                    continue
                name = ".".join(path.relative_to(dist).with_suffix("").parts)
                modules[name.removesuffix(".__init__")] = path
    return modules


def _runtime_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The imports of a module that run: everywhere but under ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in node.names
                ]
            edges |= {t for t in (owner(x) for x in targets) if t and t != name}
        graph[name] = edges
    return graph


def _circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(frozenset(group))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_the_checker_sees_a_circle_through_a_function_level_import(tmp_path: Path) -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [frozenset({"a", "b", "c"})]
    tree = ast.parse(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import x\n"
        "def f():\n    import y\n"
    )
    assert [ast.unparse(n) for n in _runtime_imports(tree)] == [
        "from typing import TYPE_CHECKING",
        "import y",
    ]


def test_no_module_imports_itself_through_others() -> None:
    modules = _packages()
    assert "hermes_core.cli.commands" in modules and "hermes_policy_commands.engine" in modules
    circles = _circles(_graph(modules))
    new = [sorted(c) for c in circles if c not in KNOWN]
    assert not new, f"import circles: {new}"
    gone = [sorted(c) for c in KNOWN if c not in circles]
    assert not gone, f"circles fixed: remove them from KNOWN: {gone}"
