"""An empty or blank thread id is a ``bad_request`` naming the param, in every op that
takes one (CONTRACT.md 0b), never "every thread" or the only one: with a single thread
present, nothing is deleted, killed or sent to."""

from __future__ import annotations

from typing import Any

import pytest

from echsd.wire.client import WireError, connect
from echsd.wire.schema import OPS

THREAD_PARAMS = [(spec, param) for spec in OPS for param in spec.params if param.name in ("thread_id", "parent")]


@pytest.mark.parametrize("empty", ["", "   "])
async def test_an_empty_thread_id_is_a_bad_request_everywhere(wired: Any, empty: str) -> None:
    async with connect(state_dir=wired.settings.state_dir) as client:
        only = (await client.create_thread(cwd=str(wired.settings.state_dir)))["thread_id"]
        assert THREAD_PARAMS, "no op takes a thread id?"
        for spec, param in THREAD_PARAMS:
            params = {**spec.example_params, param.name: empty}
            params.pop("blackboard", None)
            if spec.op_name == "thread.create":
                params = {"cwd": str(wired.settings.state_dir), "parent": empty}
            with pytest.raises(WireError) as refused:
                await client.request(spec.op_name, params)
            assert refused.value.code == "bad_request", (spec.op_name, refused.value)
            assert f"'{param.name}'" in refused.value.message, (spec.op_name, refused.value.message)
        thread = await client.get_thread(only)
        assert thread["state"] == "idle" and thread["children"] == [] and thread["last_seq"] == 1
