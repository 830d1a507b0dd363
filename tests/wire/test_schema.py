"""The op table: validation names the bad field, dispatch and client methods come from it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from echsd.wire.requests import RequestHelpers
from echsd.wire.params import ParamsError
from echsd.wire.schema import OPS, OPS_BY_NAME

CONTRACT_OPS = {
    "hello", "status", "thread.create", "thread.list", "thread.get", "thread.configure", "thread.send",
    "thread.interrupt", "thread.pause", "thread.resume", "thread.kill", "thread.history", "thread.events",
    "thread.compact", "subscribe", "unsubscribe", "blackboard.get", "blackboard.set", "blackboard.list",
    "blackboard.delete", "approval.respond", "tool.register", "tool.result", "approval.list", "thread.delete",
    "thread.tree",
}  # fmt: skip


def test_the_contract_is_covered() -> None:
    assert len(OPS_BY_NAME) == len(OPS)
    assert set(OPS_BY_NAME) >= CONTRACT_OPS


@pytest.mark.parametrize("spec", [spec for spec in OPS if spec.method], ids=lambda s: s.op_name)
async def test_client_methods_come_from_the_specs(spec: Any) -> None:
    sent: list[tuple[str, dict[str, Any]]] = []

    class Recorder(RequestHelpers):
        async def request(self, op: str, params: dict[str, Any] | None = None) -> Any:
            sent.append((op, params or {}))
            return "ok"

    method = getattr(Recorder(), spec.method)
    example = spec.example_params
    positional = [example[name] for name in spec.positional if name in example]
    keywords = {k: v for k, v in example.items() if k not in spec.positional[: len(positional)]}
    assert await method(*positional, **keywords) == "ok"
    assert sent == [(spec.op_name, example)]
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        await method(*positional, bogus=1)


@pytest.mark.parametrize("spec", OPS, ids=lambda s: s.op_name)
def test_examples_are_valid_requests(spec: Any) -> None:
    assert spec.validate(spec.example_params) == spec.example_params


@pytest.mark.parametrize(
    ("op", "params", "message"),
    [
        ("thread.send", {"thread_id": "thr_0123456789abcdef"}, "missing param 'text'"),
        ("thread.send", {"thread_id": "t", "text": "x", "bogus": 1}, "unknown param(s) for thread.send: bogus"),
        ("thread.send", {"thread_id": "t", "text": 5}, "param 'text' must be a non-empty string"),
        ("thread.send", {"thread_id": "t", "text": "x", "mode": "later"}, "param 'mode' must be one of send, queue, steer"),
        ("thread.events", {"thread_id": "t", "since": -1}, "param 'since' must be an integer >= 0"),
        ("thread.events", {"thread_id": "t", "limit": True}, "param 'limit' must be an integer >= 1"),
        ("thread.interrupt", {"thread_id": "t", "clear_queue": 1}, "param 'clear_queue' must be a boolean"),
        ("thread.configure", {"thread_id": "t", "config": []}, "param 'config' must be a map"),
        ("hello", {"protocol": 2, "token": "x"}, "param 'protocol' must be one of 1"),
    ],
)
def test_bad_params_name_the_field(op: str, params: dict[str, Any], message: str) -> None:
    with pytest.raises(ParamsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        OPS_BY_NAME[op].validate(params)


def test_null_means_not_given() -> None:
    assert OPS_BY_NAME["thread.send"].validate({"thread_id": "t", "text": "x", "mode": None}) == {"thread_id": "t", "text": "x"}
    with pytest.raises(ParamsError, match="missing param 'thread_id'"):
        OPS_BY_NAME["thread.get"].validate({"thread_id": None})


@given(st.sampled_from(OPS), st.dictionaries(st.text(max_size=12), st.none() | st.integers() | st.text(max_size=5) | st.booleans(), max_size=4))
def test_validation_accepts_or_names_a_field(spec: Any, params: dict[str, Any]) -> None:
    try:
        clean = spec.validate(params)
    except ParamsError as exc:
        assert "'" in str(exc) or "unknown param" in str(exc)
    else:
        assert set(clean) <= set(spec.by_name)
        assert all(value is not None for value in clean.values())
