"""Response chaining (thread config chain): previous_response_id with only the new items,
and the whole history again when the endpoint no longer has the response."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from echsd.daemon import Daemon
from echsd.errors import BadRequest
from echsd.settings import load_settings
from tests.helpers import Watch, check_thread_invariants, mock_directive


async def one_turn(daemon: Any, tid: str, text: str) -> None:
    async with Watch(daemon, tid) as watch:
        before = watch.last_seq
        await daemon.ops.send(tid, text)
        await watch.wait_type("turn.completed", after_seq=before)


def responses(mock_upstream: Any) -> list[dict[str, Any]]:
    return [r.body for r in mock_upstream.requests if r.path.endswith("/responses")]


async def test_chaining_sends_only_what_is_new_and_falls_back(daemon: Any, workdir: Path, mock_upstream: Any) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    await daemon.ops.configure(tid, {"chain": True})
    call = {"name": "exec_command", "arguments": {"cmd": "echo chained"}}
    await one_turn(daemon, tid, "first\n" + mock_directive([{"calls": [call]}, {"text": "done"}]))
    first, second = responses(mock_upstream)[-2:]
    assert first["store"] is True and "previous_response_id" not in first
    assert second["previous_response_id"] and [item["type"] for item in second["input"]] == ["function_call_output"]
    await one_turn(daemon, tid, "second")
    third = responses(mock_upstream)[-1]
    assert third["previous_response_id"] and [item.get("role") for item in third["input"]] == ["user"]

    mock_upstream.reset()  # the endpoint forgot its stored responses
    await one_turn(daemon, tid, "third")
    refused, resent = responses(mock_upstream)[-2:]
    assert refused["previous_response_id"] and "previous_response_id" not in resent
    assert len(resent["input"]) == len(await daemon.ops.history(tid)) - 1  # everything but the reply
    await one_turn(daemon, tid, "fourth")
    assert responses(mock_upstream)[-1]["previous_response_id"]  # chained again from the resent one
    await check_thread_invariants(daemon, tid)


async def test_chaining_is_refused_where_the_endpoint_stores_no_responses(tmp_path: Path, mock_upstream: Any, nursery: Any, workdir: Path) -> None:
    """The ChatGPT backend answers store: true with 400 "Store must be set to false": chain is
    refused when configured, and when sending on a thread that was chained elsewhere."""
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    (codex_home / "auth.json").write_text(json.dumps({"tokens": {"access_token": "tok", "refresh_token": "r", "account_id": "acct"}}))
    state = tmp_path / "state"
    backend = mock_upstream.base_url.removesuffix("/v1") + "/backend-api/codex"

    def settings(provider: str, url: str) -> Any:
        env = {"HOME": str(tmp_path / "home"), "CODEX_HOME": str(codex_home), "OPENAI_API_KEY": "sk-x"}
        return load_settings({"state_dir": str(state), "provider": provider, "base_url": url}, env)

    daemon = await nursery.start(Daemon(settings("openai", mock_upstream.base_url)).run)
    chained = (await daemon.ops.create_thread(cwd=str(workdir), chain=True))["thread_id"]  # fine on the API
    daemon.request_stop()
    await daemon.wait_stopped()

    daemon = await nursery.start(Daemon(settings("codex", backend)).run)
    with pytest.raises(BadRequest, match="chain=true needs an endpoint that stores responses.*Store must be set to false"):
        await daemon.ops.create_thread(cwd=str(workdir), chain=True)
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    with pytest.raises(BadRequest, match="ChatGPT backend \\(provider codex\\)"):
        await daemon.ops.configure(tid, {"chain": True})
    with pytest.raises(BadRequest, match="use chain=false"):
        await daemon.ops.send(chained, "hello")
    assert await daemon.ops.history(chained) == []  # refused before anything was stored
    await daemon.ops.configure(chained, {"chain": False})
    await one_turn(daemon, chained, "hello")
    sent = [r for r in mock_upstream.requests if r.path == "/backend-api/codex/responses"][-1].body
    assert sent["store"] is False and "previous_response_id" not in sent
    daemon.request_stop()
    await daemon.wait_stopped()
