"""The shape the thread runtime must keep: one owner of thread state, no import cycles."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "echsd"
THREADS = PACKAGE / "threads"
# The thread core: the one object that owns a thread's state, and its parts.
CORE = {"core.py", "control.py", "turndecisions.py", "historydecisions.py", "treedecisions.py", "conversation.py", "inputqueue.py"}
STATE_FIELDS = {
    "state", "config", "usage", "active_turn", "extra", "children", "history", "items", "inputs", "steering",
    "queue", "turn", "compaction", "stopping", "queued", "end_reason", "accepting_steer", "final_text",
}  # fmt: skip
MUTATORS = {"append", "appendleft", "extend", "clear", "pop", "popleft", "remove", "insert", "update", "setdefault"}


def _state_writes(tree: ast.AST) -> list[str]:
    """Assignments to, or in-place changes of, a thread-state field, as ``line: code``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
            targets = [node.func.value]
        for target in targets:
            while isinstance(target, ast.Subscript):
                target = target.value
            if isinstance(target, ast.Attribute) and target.attr in STATE_FIELDS:
                found.append((node.lineno, f"{node.lineno}: {ast.unparse(node)[:80]}"))
    return [text for _line, text in sorted(found)]


def test_no_module_outside_the_core_changes_thread_state() -> None:
    offenders = {}
    for path in sorted(THREADS.glob("*.py")):
        if path.name in CORE:
            continue
        writes = _state_writes(ast.parse(path.read_text()))
        if writes:
            offenders[path.name] = writes
    assert not offenders, f"thread state changed outside the core: {offenders}"


def test_the_check_sees_a_write() -> None:
    assert _state_writes(ast.parse("record.core.state = 1\nx.history.append(2)\ny.usage['k'] += 1\nz.name = 3")) == [
        "1: record.core.state = 1",
        "2: x.history.append(2)",
        "3: y.usage['k'] += 1",
    ]


def _imports(path: Path) -> set[str]:
    """Modules of ``echsd.threads`` that ``path`` imports, ``TYPE_CHECKING`` blocks included."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        found.update(name for name in names if name.startswith("echsd.threads.") and (THREADS / f"{name.split('.')[2]}.py").exists())
    return {name.split(".")[2] for name in found}


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


def test_no_import_cycle_in_the_thread_runtime() -> None:
    graph = {path.stem: _imports(path) - {path.stem} for path in THREADS.glob("*.py") if path.stem != "__init__"}
    assert _cycle(graph) is None, f"import cycle: {' -> '.join(_cycle(graph) or [])}"


def test_the_cycle_check_sees_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
