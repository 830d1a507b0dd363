"""The endpoint's model list: the mock answers GET /models as the API and the ChatGPT backend
do, the client reads both shapes, and the daemon merges the list into its catalog, caches it
in the state dir and asks again when a thread names a model it has not seen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson
import trio

from echsd.codex import Endpoint, ResponsesClient
from echsd.codex.mock import open_mock_upstream
from echsd.codex.model_list import CACHE_FILE, read_cache
from tests.wire.helpers import start_daemon, stop_daemon

SCRIPT = {"models": ["gpt-6.9-test", {"id": "gpt-6.9-small", "efforts": ["low", "high"], "default_effort": "high", "context_window": 20000}]}


async def get(url: str, **headers: str) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.get(url, headers=headers)


async def test_the_mock_lists_models_as_the_api_and_the_backend_do() -> None:
    async with open_mock_upstream(SCRIPT, require_token="tok") as mock:
        root = mock.base_url.removesuffix("/v1")
        refused = await get(mock.base_url + "/models")
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"
        api = await get(mock.base_url + "/models", Authorization="Bearer tok")
        listed = api.json()
        assert api.status_code == 200 and listed["object"] == "list"
        entries = {entry["id"]: entry for entry in listed["data"]}
        assert set(entries["gpt-6.9-test"]) == {"id", "object", "created", "owned_by"} and entries["gpt-6.9-test"]["object"] == "model"
        assert entries["gpt-5"]["shutdown_date"] == "2026-12-11" and "gpt-6.1-sol" in entries
        backend = await get(root + "/backend-api/codex/models?client_version=0.169.0", Authorization="Bearer tok")
        assert backend.status_code == 200 and backend.headers["etag"].startswith('"')
        models = {entry["slug"]: entry for entry in backend.json()["models"]}
        assert "gpt-4.1" not in models  # the backend offers Codex's models, not every API model
        sol = models["gpt-6.1-sol"]
        assert sol["supported_reasoning_levels"][-1] == {"effort": "ultra", "description": "ultra"}
        assert (sol["default_reasoning_level"], sol["context_window"], sol["default_verbosity"]) == ("low", 272000, "low")
        assert models["gpt-6.9-small"]["context_window"] == 20000 and models["gpt-6.9-small"]["default_reasoning_level"] == "high"
        assert mock.app.received == 0 and [r.query for r in mock.app.listings][-1] == "client_version=0.169.0"


async def test_the_client_reads_both_shapes_with_its_credentials() -> None:
    async with open_mock_upstream(SCRIPT) as mock:
        api = await ResponsesClient(Endpoint(mock.base_url)).model_list()
        assert api.models["gpt-6.9-test"] == {} and api.models["gpt-5"] == {"shutdown": "2026-12-11"}
        assert mock.app.listings[-1].path == "/v1/models" and not mock.app.listings[-1].query
        root = mock.base_url.removesuffix("/v1")
        codex = Endpoint(root + "/backend-api/codex", headers={"version": "0.169.0"}, provider="codex")
        backend = await ResponsesClient(codex).model_list()
        assert backend.etag and backend.models["gpt-6.9-small"]["efforts"] == ("low", "high")
        assert backend.models["gpt-6.1-terra"]["context_window"] == 500000 and backend.models["gpt-6.1-sol"]["verbosity"] == "low"
        asked = mock.app.listings[-1]
        assert (asked.path, asked.query, asked.headers["version"]) == ("/backend-api/codex/models", "client_version=0.169.0", "0.169.0")


async def wait_fetches(daemon: Any, count: int) -> None:
    with trio.fail_after(10):
        await daemon.model_list.wait_fetches(count)


async def test_the_daemon_merges_caches_and_refreshes_the_list(tmp_path: Path, nursery: trio.Nursery, workdir: Path) -> None:
    state = tmp_path / "state"
    tuning = {"model_list_interval_s": 0.05}
    async with open_mock_upstream(SCRIPT) as mock:
        daemon = await start_daemon(nursery, state, mock.base_url, tcp=False, tuning=tuning)
        await wait_fetches(daemon, 1)
        catalog = daemon.settings.catalog
        listed = catalog.get("gpt-6.9-test")
        assert listed.known and listed.listed and listed.reasoning and catalog.source("gpt-6.9-test") == "family gpt-6+endpoint"
        cached = read_cache(state / CACHE_FILE, mock.base_url)
        assert cached is not None and "gpt-6.9-test" in cached.models and cached.fetched_at > 0
        # The endpoint lists a new model; a thread naming it makes the daemon ask again.
        assert not catalog.get("gpt-6.9-late").known
        mock.app.models["gpt-6.9-late"] = mock.app.models["gpt-6.9-test"].__class__("gpt-6.9-late")
        thread = await daemon.ops.create_thread(cwd=str(workdir), model="gpt-6.9-late-preview")
        assert thread["config"]["reasoning"] == "medium"  # judged by its family meanwhile
        await wait_fetches(daemon, 2)
        assert catalog.get("gpt-6.9-late").listed
        await stop_daemon(daemon)
        url = mock.base_url
    # The endpoint is gone: the next start works from the cache.
    daemon = await start_daemon(nursery, state, url, tcp=False, tuning=tuning)
    await wait_fetches(daemon, 1)
    assert daemon.settings.catalog.get("gpt-6.9-late").listed
    await stop_daemon(daemon)
    data = orjson.loads((state / CACHE_FILE).read_bytes())
    assert data["base_url"] == url and "gpt-6.9-late" in data["models"]  # the failed fetch left the cache alone
