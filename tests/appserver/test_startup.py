"""The Codex TUI's start-up sequence (codex-cli 0.169.0), request for request, over both
transports: what must succeed succeeds, everything is answered, ids come back unchanged."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from echsd.appserver.ids import thread_id_of
from tests.appserver.helpers import AppClient, RpcFailed, app_client

# (method, params, must succeed) in the order the TUI sends them at start-up.
STARTUP: list[tuple[str, dict[str, Any], bool]] = [
    ("account/read", {}, True),
    ("account/read", {}, True),
    ("model/list", {"modelProvider": None, "cursor": None, "limit": None, "includeHidden": True}, True),
    ("hooks/list", {"cwds": ["/home/u/project"], "threadId": None}, False),
    ("account/bedrock/checkGovCloudRequirements", {}, False),
    ("config/read", {"includeLayers": True, "cwd": "."}, True),
    ("configRequirements/read", {}, True),
    ("collaborationMode/list", {}, False),
]


@pytest.mark.parametrize("transport", ["unix", "tcp"])
async def test_startup_sequence_as_the_tui_sends_it(appd: Any, transport: str) -> None:
    async with app_client(appd, transport) as client:
        init = await client.initialize()
        assert init["userAgent"].startswith("echsd/")
        for method, params, must in STARTUP:
            response = await client.response(await client.start(method, params, request_id=f"{method}-x"))
            assert response["id"] == f"{method}-x"
            assert ("result" in response) or not must, response
        started = await client.start_thread(sandbox="read-only", config={})
        thread = started["thread"]
        assert uuid.UUID(thread["id"]) and thread_id_of(thread["id"]) == thread["name"]
        assert started["cwd"] and started["model"] == appd.settings.model
        await client.notification("thread/started")
        listed = await client.call("thread/list", {"limit": 100, "sourceKinds": [], "archived": False})
        assert [t["name"] for t in listed["data"]] == [thread["name"]]
        assert (await client.call("thread/list", {"limit": 100, "sourceKinds": ["exec", "appServer"]}))["data"] == []
        assert (await client.call("thread/loaded/list", {}))["data"] == [thread["id"]]
        assert (await client.call("skills/list", {"cwds": ["/w"], "forceReload": True}))["data"][0]["skills"] == []
        assert (await client.call("thread/read", {"threadId": thread["id"]}))["thread"]["id"] == thread["id"]
        assert (await client.call("thread/turns/list", {"threadId": thread["id"], "limit": 1}))["data"] == []
        assert (await client.call("plugin/installed", {"cwds": ["/w"]}))["marketplaces"] == []


async def test_model_list_carries_no_notices_and_names_the_default(client: AppClient, appd: Any) -> None:
    models = (await client.call("model/list", {"includeHidden": True}))["data"]
    assert models[0]["model"] == appd.settings.model and models[0]["isDefault"]
    assert all(m["upgrade"] is None and m["availabilityNux"] is None and m["upgradeInfo"] is None for m in models)
    assert sum(m["isDefault"] for m in models) == 1


async def test_integer_and_string_ids_are_echoed(client: AppClient) -> None:
    for request_id in (7, "tui-config-read-1", 0, "x" * 40):
        response = await client.response(await client.start("configRequirements/read", None, request_id=request_id))
        assert response["id"] == request_id and response["result"] == {"requirements": None}


async def test_every_request_is_answered_unknown_ones_with_an_error(client: AppClient) -> None:
    for method in ("thread/backgroundTerminals/list", "fs/readFile", "no/such/method"):
        with pytest.raises(RpcFailed) as failed:
            await client.call(method, {"threadId": "x"})
        assert failed.value.code == -32601 and "not supported by echsd" in failed.value.message


async def test_requests_before_initialize_are_refused(appd: Any) -> None:
    async with app_client(appd) as client:
        with pytest.raises(RpcFailed, match="initialize first"):
            await client.call("account/read", {})
        await client.initialize()
        assert (await client.call("account/read", {}))["requiresOpenaiAuth"] is False
        with pytest.raises(RpcFailed, match="already initialized"):
            await client.call("initialize", {"clientInfo": {"name": "x", "version": "1"}})


async def test_ephemeral_threads_are_refused(client: AppClient, appd: Any) -> None:
    with pytest.raises(RpcFailed, match="ephemeral"):
        await client.start_thread(ephemeral=True)
    assert await appd.ops.list_threads() == []
