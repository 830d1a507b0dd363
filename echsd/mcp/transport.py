"""Transports to MCP servers: a stdio server run as a contained tool process, streamable HTTP.

The SDK's own ``stdio_client`` starts the server with ``anyio.open_process`` in a new
process group; echsd starts it like every tool command instead (``ToolProcesses.spawn``:
its own cgroup, PID namespace or process group, recorded so a SIGKILLed daemon's servers
are killed at the next start, killed whole when the session ends; confined by the sandbox
``confine.py`` gives it), with three pipes: JSON-RPC messages one per line on stdin/stdout
(parsed and written with the SDK's message types), stderr line by line to the daemon's log at debug. Its environment is the few variables a
program needs (``HOME``, ``PATH``, locale...) plus the server's ``env_vars`` and ``env``:
never the daemon's secrets.

HTTP is the SDK's ``streamable_http_client`` with the server's headers and bearer token.

``tapped`` puts a look at every message the server sends in front of the SDK, in the order
they arrive: a ``notifications/tools/list_changed`` is seen before the response that follows
it, so the next model request can never miss the change.
"""

from __future__ import annotations

import os
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Awaitable, Callable

import anyio
import mcp_types
import trio
from mcp.client._transport import Transport, TransportStreams
from mcp.shared.message import SessionMessage

from echsd.logs import get_logger
from echsd.mcp.config import McpServerConfig
from echsd.tools.process import ContainedProcess, tool_processes
from echsd.tools.sandbox.policy import SandboxPolicy

log = get_logger(__name__)

MAX_LINE_BYTES = 64 * 1024 * 1024  # one message from a server (an image or two, base64)
OFF_LOOP_BYTES = 256 * 1024  # a message this big is parsed in a worker thread
MAX_STDERR_LINE = 4096  # of a stderr line logged (the rest is cut)
EXIT_GRACE_S = 1.0  # after stdin closes, before the server's enclosure is killed
STDERR_GRACE_S = 0.5  # after the server exited, for the rest of its stderr
# What a server gets of the daemon's environment (Codex passes the same few).
BASE_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR", "TZ")


Confine = Callable[[McpServerConfig, str], Awaitable[SandboxPolicy | None]]  # (server, its cwd) -> its sandbox
Heard = Callable[[str], None]  # told each line the server writes on stderr


class TransportError(Exception):
    """The server could not be started or reached; the message says why."""


class LineSplitter:
    """Bytes in, complete lines out (without their newline); a line over ``limit`` bytes
    raises ``ValueError`` instead of growing without bound (sans-IO)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._pending = bytearray()

    def feed(self, chunk: bytes) -> list[bytes]:
        self._pending += chunk
        if b"\n" not in chunk:
            if len(self._pending) > self.limit:
                raise ValueError(f"a line longer than {self.limit:,} bytes")
            return []
        *lines, rest = bytes(self._pending).split(b"\n")
        self._pending = bytearray(rest)
        if any(len(line) > self.limit for line in lines) or len(rest) > self.limit:
            raise ValueError(f"a line longer than {self.limit:,} bytes")
        return lines

    def rest(self) -> bytes:
        return bytes(self._pending)


def server_env(config: McpServerConfig, environ: dict[str, str] | None = None) -> dict[str, str]:
    source = os.environ if environ is None else environ
    env = {key: source[key] for key in (*BASE_ENV, *config.env_vars) if key in source}
    env.update(config.env)
    return env


def parse_message(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return ValueError(f"the server wrote a line that is not a JSON-RPC message: {exc}")


@asynccontextmanager
async def stdio_transport(
    config: McpServerConfig, cwd: str, confine: Confine | None = None, heard: Heard | None = None
) -> AsyncIterator[TransportStreams]:
    """Run the server's command in ``cwd`` (its own, or the daemon's), in its own enclosure
    and the sandbox ``confine`` gives it, if any, and speak to it over its pipes. ``heard``
    gets its stderr's lines, also the last ones of a server that exits (why it did, often)."""
    assert config.command is not None
    sandbox = await confine(config, cwd) if confine is not None else None
    env = server_env(config)
    if sandbox is not None and sandbox.confined and sandbox.tmpdir:
        env["TMPDIR"] = sandbox.tmpdir  # its own, inside the sandbox (made by the fork server)
    try:
        argv = [config.command, *config.args]
        process = await tool_processes().spawn(argv, cwd=cwd, env=env, tty=False, sandbox=sandbox, pipes=True)
    except OSError as exc:
        raise TransportError(f"cannot start {config.command!r}: {exc.strerror or exc}") from None
    log.debug("mcp server started", server=config.name, pid=process.pid)
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    stderr_read = trio.Event()
    stopped = False
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_read_stdout, process, read_send, config.name)
            nursery.start_soon(_write_stdin, process, write_receive)
            nursery.start_soon(_log_stderr, process, config.name, heard, stderr_read)
            try:
                yield read_receive, write_send
            finally:
                with trio.CancelScope(shield=True):  # before the stderr reader is cancelled
                    stopped = True
                    await _stop(process, config.name, stderr_read)
                nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            if not stopped:
                await _stop(process, config.name, stderr_read)
            for stream in (read_send, read_receive, write_send, write_receive):
                stream.close()


async def _read_stdout(process: ContainedProcess, sink: Any, name: str) -> None:
    lines = LineSplitter(MAX_LINE_BYTES)
    async with sink:
        while True:
            chunk = await process.read()
            if not chunk:
                return  # the server closed stdout (exited): the session sees the end
            try:
                complete = lines.feed(chunk)
            except ValueError as exc:
                log.warning("mcp server output refused", server=name, error=str(exc))
                await sink.send(ValueError(f"the server wrote {exc}"))
                return
            for line in complete:
                if len(line) > OFF_LOOP_BYTES:  # a big message is parsed off the event loop
                    await sink.send(await trio.to_thread.run_sync(parse_message, line))
                elif line.strip():
                    await sink.send(parse_message(line))


async def _write_stdin(process: ContainedProcess, source: Any) -> None:
    stdin = process.stdin
    assert stdin is not None
    async with source:
        async for message in source:
            data = message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
            try:
                await stdin.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return  # the server is gone; its stdout's end tells the session


async def _log_stderr(process: ContainedProcess, name: str, heard: Heard | None, done: trio.Event) -> None:
    stderr = process.errors
    assert stderr is not None

    def tell(line: bytes) -> None:
        text = line[:MAX_STDERR_LINE].decode(errors="replace")
        log.debug("mcp server stderr", server=name, line=text)
        if heard is not None and text.strip():
            heard(text)

    pending = b""
    try:
        while True:
            try:
                chunk = await stderr.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            pending = pending[-MAX_STDERR_LINE:]
            for line in lines:
                tell(line)
        if pending:
            tell(pending)
    finally:
        done.set()


async def _stop(process: ContainedProcess, name: str, stderr_read: trio.Event) -> None:
    """Close stdin, give the server a moment to exit by itself (and its stderr to be read to
    the end), then kill what is left."""
    stdin = process.stdin
    if stdin is not None:
        try:
            await stdin.aclose()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
    with trio.move_on_after(EXIT_GRACE_S):
        await process.wait()
        with trio.move_on_after(STDERR_GRACE_S):
            await stderr_read.wait()
    code = await process.release()
    log.debug("mcp server stopped", server=name, pid=process.pid, exit_code=code)


def http_transport(config: McpServerConfig, environ: dict[str, str] | None = None) -> Transport:
    """The SDK's streamable-HTTP transport with the server's headers and bearer token."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    source = os.environ if environ is None else environ
    headers = dict(config.headers)
    for header, variable in config.env_headers.items():
        if source.get(variable):
            headers[header] = source[variable]
    if config.bearer_token_env_var is not None:
        token = source.get(config.bearer_token_env_var)
        if not token:
            raise TransportError(f"the environment variable {config.bearer_token_env_var} (bearer_token_env_var) is not set")
        headers["Authorization"] = f"Bearer {token}"
    assert config.url is not None
    client = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0))
    return _owning(streamable_http_client(config.url, http_client=client), client)


@asynccontextmanager
async def _owning(transport: Transport, client: Any) -> AsyncIterator[TransportStreams]:
    """``transport``, closing the HTTP client it was given when it ends."""
    try:
        async with transport as streams:
            yield streams
    finally:
        with trio.CancelScope(shield=True):
            await client.aclose()


@asynccontextmanager
async def tapped(transport: Transport, look: Callable[[SessionMessage], None], ended: Callable[[], None]) -> AsyncIterator[TransportStreams]:
    """``transport`` with ``look`` called on each message the server sends, in order,
    before the SDK sees it, and ``ended`` once the server's side is closed (it exited, or
    the connection broke)."""
    async with transport as (inner_read, write):
        outer_send, outer_read = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def forward() -> None:
            try:
                async with outer_send:
                    async for message in inner_read:
                        if isinstance(message, SessionMessage):
                            look(message)
                        await outer_send.send(message)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
            finally:
                ended()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(forward)
            try:
                yield outer_read, write
            finally:
                nursery.cancel_scope.cancel()
                outer_read.close()
