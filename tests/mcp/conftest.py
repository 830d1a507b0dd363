"""MCP fixtures: the demo MCP server (``servers/``, written with the SDK) over streamable HTTP
as a real subprocess, and an in-process daemon whose config.toml names it twice: over stdio
(``demo``, started by the daemon) and over HTTP (``web``, with a bearer token and a header)."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import pytest
import trio

from tests.helpers import make_settings

SERVERS = Path(__file__).parent / "servers"
STDIO_SERVER = SERVERS / "stdio_server.py"
HTTP_SERVER = SERVERS / "http_server.py"
TOKEN_ENV = "ECHS_TEST_MCP_TOKEN"
TOKEN = "demo-token-0123456789"


class HttpServer:
    def __init__(self, process: subprocess.Popen[str], port: int) -> None:
        self.process = process
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"


def start_http_server(token: str | None = TOKEN, port: int = 0) -> HttpServer:
    command = [sys.executable, str(HTTP_SERVER), "--port", str(port), *(["--token", token] if token else [])]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()  # blocks until it listens (or exits: then the assert says so)
    assert line.startswith("LISTENING "), f"the HTTP demo server did not start: {line!r}"
    return HttpServer(process, int(line.split()[1]))


@pytest.fixture(scope="module")
def http_server() -> Iterator[HttpServer]:
    server = start_http_server()
    yield server
    server.process.kill()
    server.process.wait()


def demo_config(http: HttpServer | None = None, **demo: Any) -> str:
    """config.toml naming the demo server over stdio (``demo``) and, given ``http``, over HTTP (``web``)."""
    lines = ["[mcp_servers.demo]", f"command = {sys.executable!r}", f"args = [{str(STDIO_SERVER)!r}]"]
    lines += [f"{key} = {value!r}" if not isinstance(value, bool) else f"{key} = {str(value).lower()}" for key, value in demo.items()]
    if http is not None:
        lines += [
            "",
            "[mcp_servers.web]",
            f"url = {http.url!r}",
            f'bearer_token_env_var = "{TOKEN_ENV}"',
            'http_headers = { "X-Demo" = "from-config" }',
            "enabled_tools = [\"echo\", \"header\", \"word_count\"]",
            "",
            "[agent_types.webonly]",
            'description = "uses only the web server"',
            'mcp_servers = ["web"]',
        ]
    return "\n".join(lines).replace("'", '"') + "\n"


@pytest.fixture
def mcp_state(tmp_path: Path, http_server: HttpServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "config.toml").write_text(demo_config(http_server, tool_timeout_sec=1.5))
    return state


@pytest.fixture
async def mcp_daemon(mcp_state: Path, mock_upstream: Any, nursery: Any) -> AsyncIterator[Any]:
    from echsd.daemon import Daemon

    instance = Daemon(make_settings(mcp_state, mock_upstream.base_url))
    await nursery.start(instance.run)
    yield instance
    instance.request_stop()
    await instance.wait_stopped()


@asynccontextmanager
async def daemon_with(root: Path, config: str, base_url: str, nursery: trio.Nursery) -> AsyncIterator[Any]:
    """An in-process daemon whose state dir (under ``root``) has this config.toml."""
    from echsd.daemon import Daemon

    state = root / "state"
    state.mkdir(mode=0o700)
    (state / "config.toml").write_text(config)
    daemon = Daemon(make_settings(state, base_url))
    await nursery.start(daemon.run)
    try:
        yield daemon
    finally:
        daemon.request_stop()
        with trio.fail_after(15):
            await daemon.wait_stopped()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and ") Z " not in stat.read_text()
