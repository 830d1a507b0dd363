"""Typed events: every documented event type is emitted somewhere, and every emitted map has
the fields its type declares (read from the code, so a type with no emitter fails here)."""

from __future__ import annotations

import ast
from pathlib import Path

from echsd.events import EVENT_TYPES, TurnDelta, TurnUsage

PACKAGE = Path(__file__).resolve().parents[1] / "echsd"
CATALOGUE = {PACKAGE / "events" / name for name in ("base.py", "thread.py", "turn.py", "streams.py", "__init__.py")}
EMITTING = {"emit", "emit_one", "_emit", "announce"}  # functions whose first argument is the event type
CLASSES = {kind.__name__: kind for kind in EVENT_TYPES.values()}


def emissions(sources: dict[str, str], classes: dict[str, type]) -> tuple[set[str], list[str]]:
    """(event classes emitted, problems): an emission is ``emit(Kind, {...})`` (or ``emit_one``,
    ``_emit``, ``announce``), a ``(Kind, data)`` pair handed on to be emitted, ``Kind.type_name``
    as an envelope's ``"event"`` or an ``Event(...)``'s type, or ``gap_envelope(...)``."""
    emitted: set[str] = set()
    problems: list[str] = []
    for where, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                first = node.args[0] if node.args else None
                if name in EMITTING and isinstance(first, ast.Name) and first.id in classes:
                    emitted.add(first.id)
                    if len(node.args) > 1 and isinstance(node.args[1], ast.Dict):
                        keys = {k.value for k in node.args[1].keys if isinstance(k, ast.Constant)}
                        unknown = keys - set(classes[first.id].fields)
                        if unknown:
                            problems.append(f"{where}:{node.lineno}: {first.id} has no field(s) {sorted(unknown)}")
                if name == "gap_envelope":
                    emitted.add("EventsGap")
                if name == "Event":
                    emitted.update(_type_names(node.args, classes))
            elif isinstance(node, ast.Tuple) and node.elts and isinstance(node.elts[0], ast.Name) and node.elts[0].id in classes:
                emitted.add(node.elts[0].id)
            elif isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    if isinstance(key, ast.Constant) and key.value == "event":
                        emitted.update(_type_names([value], classes))
    return emitted, problems


def _type_names(nodes: list[ast.expr], classes: dict[str, type]) -> set[str]:
    return {
        node.value.id
        for node in nodes
        if isinstance(node, ast.Attribute) and node.attr == "type_name" and isinstance(node.value, ast.Name) and node.value.id in classes
    }


def daemon_sources() -> dict[str, str]:
    return {str(path.relative_to(PACKAGE)): path.read_text() for path in PACKAGE.rglob("*.py") if path not in CATALOGUE}


def test_every_event_type_has_an_emitter_and_its_fields() -> None:
    emitted, problems = emissions(daemon_sources(), CLASSES)
    missing = sorted(name for name, kind in EVENT_TYPES.items() if kind.__name__ not in emitted)
    assert not missing, f"documented but never emitted: {missing}"
    assert not problems, problems


def test_the_check_sees_a_missing_emitter_and_a_wrong_field() -> None:
    sources = {"a.py": 'fx.emit(TurnDelta, {"turn_id": t, "item_id": i, "delta": d})\nlog.emit_one(TurnUsage, {"tokens": 1})\n'}
    emitted, problems = emissions(sources, {"TurnDelta": TurnDelta, "TurnUsage": TurnUsage, "TurnStarted": object})
    assert emitted == {"TurnDelta", "TurnUsage"}  # TurnStarted: none
    assert problems == ["a.py:2: TurnUsage has no field(s) ['tokens']"]


def test_a_view_reads_fields_and_gives_none_for_absent_ones() -> None:
    view = TurnDelta.of({"turn_id": "turn_1", "delta": "Hel"})
    assert (view.turn_id, view.item_id, view.delta) == ("turn_1", None, "Hel")
    assert list(TurnDelta.fields) == ["turn_id", "item_id", "delta"] and TurnDelta.streamed and TurnDelta.stored
