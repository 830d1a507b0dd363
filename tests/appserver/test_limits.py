"""The native wire's limits hold on the app-server door too: a message, instructions or a
model name past them is refused with the limit named, and nothing is created or sent."""

from __future__ import annotations

from typing import Any

import pytest

from echsd.wire.params import MAX_INSTRUCTIONS_CHARS, MAX_NAME_CHARS, MAX_TEXT_CHARS
from tests.appserver.helpers import AppClient, RpcFailed, user_input

MIB = 1024 * 1024


async def _thread_count(appd: Any) -> int:
    return len(await appd.ops.list_threads())


async def test_a_message_past_the_wires_limit_is_refused(client: AppClient, appd: Any) -> None:
    thread = (await client.start_thread())["thread"]
    huge = "x" * (15 * MIB)  # 15 MiB: under the frame limit (16 MiB), far past the message limit
    for method, params in (
        ("turn/start", user_input(thread["id"], huge)),
        ("turn/start", user_input(thread["id"], "a" * (MAX_TEXT_CHARS // 2)) | {"input": [{"type": "text", "text": "a" * (MAX_TEXT_CHARS // 2)}] * 3}),
    ):
        with pytest.raises(RpcFailed, match=f"{MAX_TEXT_CHARS:,}") as refused:
            await client.call(method, params)
        assert "text" in refused.value.message
    history = await appd.ops.history(thread["name"])
    assert history == []  # nothing was sent
    await client.call("turn/start", user_input(thread["id"], "x" * 1000))  # a normal one goes through
    await client.notification("turn/completed")


async def test_instructions_past_the_wires_limit_are_refused(client: AppClient, appd: Any) -> None:
    before = await _thread_count(appd)
    for key in ("baseInstructions", "developerInstructions"):
        with pytest.raises(RpcFailed, match=f"{MAX_INSTRUCTIONS_CHARS:,}"):
            await client.start_thread(**{key: "i" * 1_000_000})
    assert await _thread_count(appd) == before  # no thread was created
    started = await client.start_thread(baseInstructions="i" * 1000)
    assert started["thread"]["id"]


async def test_a_model_name_past_the_wires_limit_is_refused(client: AppClient, appd: Any) -> None:
    before = await _thread_count(appd)
    long_name = "m" * 100_000
    with pytest.raises(RpcFailed, match=f"{MAX_NAME_CHARS}"):
        await client.start_thread(model=long_name)
    assert await _thread_count(appd) == before
    thread = (await client.start_thread())["thread"]
    model = (await appd.ops.get_thread(thread["name"]))["config"]["model"]
    with pytest.raises(RpcFailed, match=f"{MAX_NAME_CHARS}"):
        await client.call("turn/start", user_input(thread["id"], "hi") | {"model": long_name})
    assert (await appd.ops.get_thread(thread["name"]))["config"]["model"] == model  # unchanged
    assert await appd.ops.history(thread["name"]) == []  # and nothing sent
