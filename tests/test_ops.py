"""Operations as values: each op has exactly one handler, travels between nodes in a
versioned form, and refuses bad params at construction (every door gets the checks)."""

from __future__ import annotations

from typing import Any

import pytest

import echsd.router  # noqa: F401 -- registers the node handlers
import echsd.threads.actor  # noqa: F401 -- registers the actor's handlers (and the core's decisions)
from echsd.errors import BadRequest
from echsd.ops import OP_CLASSES, WIRE_OPS
from echsd.ops.base import EVERYWHERE, AtNode, Op, OwnerOf, Where, from_forward
from echsd.ops.daemon import ListApprovals, RegisterTools
from echsd.ops.threads import Create, Send
from echsd.router.handlers import NODE
from echsd.threads.handlers import ACTOR, DECISIONS
from echsd.wire.params import ParamsError

TID = "thr_0123456789abcdef"


def handlers_of(cls: type[Op]) -> list[str]:
    return [name for name, table in (("node", NODE), ("actor", ACTOR), ("core", DECISIONS)) if cls in table]


@pytest.mark.parametrize("cls", sorted(OP_CLASSES.values(), key=lambda c: c.op_name), ids=lambda c: c.op_name)
def test_every_op_has_exactly_one_handler(cls: type[Op]) -> None:
    found = handlers_of(cls)
    if cls.where is Where.CONNECTION:
        assert found == [], f"{cls.op_name} is the connection's, yet has {found}"
    else:
        assert len(found) == 1, f"{cls.op_name}: {found or 'no handler'}"


def test_the_check_sees_an_op_without_a_handler() -> None:
    from echsd.ops.base import op

    @op("test.orphan", Where.HERE, wire=False)
    class Orphan(Op):
        """Nobody answers this one."""

    try:
        assert handlers_of(Orphan) == []
    finally:
        del OP_CLASSES["test.orphan"]


def example_ops() -> list[Op]:
    made = []
    for cls in WIRE_OPS:
        if cls.where is Where.CONNECTION or "peer" in cls.__dataclass_fields__:  # type: ignore[attr-defined]
            continue
        made.append(cls.from_wire(dict(cls.example_params)))
    return made


@pytest.mark.parametrize("value", example_ops(), ids=lambda v: v.op_name)
def test_the_forwarding_form_round_trips(value: Op) -> None:
    name, text = value.forward_form()
    assert name == value.op_name
    assert from_forward(name, text) == value


def test_a_forwarding_form_of_another_version_is_refused_in_words() -> None:
    name, text = Send(thread_id=TID, text="hi").forward_form()
    with pytest.raises(BadRequest, match="version 2 .* this node speaks version 1"):
        from_forward(name, text.replace('"v":1', '"v":2'))
    with pytest.raises(BadRequest, match="unknown here"):
        from_forward("thread.teleport", text)


def test_an_op_bound_to_a_connection_does_not_travel() -> None:
    value = RegisterTools(thread_id=TID, specs=[], peer=object())
    with pytest.raises(BadRequest, match="node that runs the thread"):
        value.forward_form()


def test_a_forwarded_send_gets_an_idempotency_key_once() -> None:
    forwarded = Send(thread_id=TID, text="hi").for_forwarding()
    assert isinstance(forwarded, Send) and forwarded.client_msg_id and forwarded.client_msg_id.startswith("fwd-")
    keyed = Send(thread_id=TID, text="hi", client_msg_id="mine")
    assert keyed.for_forwarding() is keyed


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Send(thread_id=TID, text="x" * 1_048_577), "param 'text' is 1,048,577 characters long"),
        (lambda: Send(thread_id=TID, text="   "), "param 'text' must be a non-empty string"),
        (lambda: Create(config={"cwd": "a\0b"}), "param 'cwd' is not a path"),
        (lambda: Create(config={"teleport": True}), "unknown param"),
        (lambda: Send(thread_id=TID, text=None), "missing param 'text'"),
    ],
)
def test_construction_checks_params_as_the_wire_does(make: Any, message: str) -> None:
    with pytest.raises(ParamsError, match=message):
        make()


def test_routes_follow_the_value() -> None:
    assert Create(config={}).route() == AtNode(None)
    assert Create(config={}, parent=TID).route() == OwnerOf(TID)
    assert ListApprovals(thread_id=TID).route() == OwnerOf(TID)
    assert ListApprovals().route() is EVERYWHERE  # every node's, merged
