"""No import cycle anywhere in ``echsd``: not at module level, not behind a function-level
import, not behind ``if TYPE_CHECKING:``. A package's ``__init__`` counts as a module, so a
submodule that imports names from its own package (``from echsd.settings import sandbox``)
closes a cycle with an ``__init__`` that imports that submodule. Without cycles every module
imports first, in any order."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the directory that holds the echsd package


def _imported(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Every dotted name an import statement anywhere in ``tree`` may load."""
    package = module if is_package else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the echsd modules it imports (anywhere in its text)."""
    files = {".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): path for path in (root / "echsd").rglob("*.py")}
    return {
        module: {name for name in _imported(ast.parse(path.read_text()), module, path.name == "__init__.py") if name in files} - {module}
        for module, path in files.items()
    }


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    visiting: list[str] = []
    done: set[str] = set()

    def visit(node: str) -> list[str] | None:
        if node in visiting:
            return visiting[visiting.index(node) :] + [node]
        if node in done:
            return None
        visiting.append(node)
        for target in sorted(graph.get(node, ())):
            cycle = visit(target)
            if cycle:
                return cycle
        visiting.pop()
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start)
        if cycle:
            return cycle
    return None


def test_no_import_cycle_in_echsd() -> None:
    graph = import_graph()
    assert "echsd.threads.actor" in graph and graph["echsd.threads.actor"], "the graph is empty: the check looks nowhere"
    assert _cycle(graph) is None, f"import cycle: {' -> '.join(_cycle(graph) or [])}"


def test_the_cycle_check_sees_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_the_graph_sees_hidden_and_package_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "echsd" / "settings"
    pkg.mkdir(parents=True)
    (tmp_path / "echsd" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from echsd.settings.load import x\n")
    (pkg / "load.py").write_text("def f():\n    from .sections import y\n")
    (pkg / "sections.py").write_text("from echsd.settings import sandbox\n")
    (pkg / "sandbox.py").write_text("")
    assert _cycle(import_graph(tmp_path)) == ["echsd.settings", "echsd.settings.load", "echsd.settings.sections", "echsd.settings"]

