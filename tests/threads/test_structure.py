"""The shape the thread runtime must keep: one owner of thread state (import cycles: tests/test_import_cycles.py)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "echsd"
THREADS = PACKAGE / "threads"
# The thread core: the one object that owns a thread's state, and its parts.
CORE = {
    "core.py", "control.py", "turndecisions.py", "historydecisions.py", "treedecisions.py", "workspacedecisions.py", "conversation.py",
    "inputqueue.py",
}  # fmt: skip
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
