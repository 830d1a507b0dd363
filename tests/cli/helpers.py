"""CLI test helpers: a real ``echsd serve`` subprocess, real ``echs`` subprocesses, a real
terminal (tmux), and event waits through the client library."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Iterator

import trio

from tests.helpers import store_url_for

WAIT_S = 15.0
BIN = Path(sys.executable).parent
ECHS = str(BIN / "echs")
ECHSD = str(BIN / "echsd")


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """An environment with no model credentials and no ECHS_* leaking in from outside."""
    # Without PYTHONDONTWRITEBYTECODE, as installed: each echs run need not recompile our modules.
    unwanted = ("ECHS_", "OPENAI_", "NOTIFY_SOCKET", "WATCHDOG_", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(unwanted)}
    env.update(HOME=str(home), CODEX_HOME=str(home / "no-codex"), NO_COLOR="1")
    env.update(extra)
    return env


class Serve:
    """``echsd serve --provider mock`` on a state dir, as a subprocess; stderr is drained."""

    def __init__(self, state_dir: Path, *extra: str, env: dict[str, str] | None = None, suite_store: bool = True) -> None:
        """``suite_store`` False: the store is the test's to give (flags or ``env``)."""
        self.state_dir = state_dir
        self.extra = extra
        self.suite_store = suite_store
        self.env = env or clean_env(state_dir.parent)
        self.lines: list[str] = []
        self.logged = threading.Condition()
        self.process: subprocess.Popen[str] | None = None
        self.start()

    def start(self) -> None:
        ready = threading.Event()
        store = store_url_for(self.state_dir) if self.suite_store else None
        flags = ["--store", store] if store is not None else []
        command = [ECHSD, "serve", "--provider", "mock", "--state-dir", str(self.state_dir), *flags, *self.extra]
        self.process = process = subprocess.Popen(
            command, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )

        def drain() -> None:
            assert process.stderr is not None
            for line in process.stderr:
                with self.logged:
                    self.lines.append(line)
                    self.logged.notify_all()
                if "echsd ready" in line:
                    ready.set()

        threading.Thread(target=drain, daemon=True).start()
        if not ready.wait(WAIT_S):
            self.kill()
            raise AssertionError("echsd serve did not start:\n" + "".join(self.lines))

    def wait_logged(self, text: str, timeout: float = WAIT_S) -> str:
        """The first log line holding ``text``, waiting for the daemon to write it."""
        with self.logged:
            found = self.logged.wait_for(lambda: next((line for line in self.lines if text in line), None), timeout)
        if found is None:
            raise AssertionError(f"echsd serve never logged {text!r}:\n" + "".join(self.lines))
        return found

    def terminate(self, timeout: float = WAIT_S) -> int:
        """SIGTERM (graceful stop) and wait."""
        assert self.process is not None
        self.process.terminate()
        return self.process.wait(timeout)

    def kill(self) -> None:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(WAIT_S)


class MockProcess:
    """A running ``echsd mock-upstream``: its URLs, and the requests it recorded."""

    def __init__(self, port: int) -> None:
        self.root = f"http://127.0.0.1:{port}"
        self.url = self.root + "/v1"  # the API's shape
        self.backend = self.root + "/backend-api/codex"  # the ChatGPT backend's

    def requests(self) -> list[dict[str, Any]]:
        """The model requests received (``/_mock/requests``: method, path, headers, body)."""
        with urllib.request.urlopen(self.root + "/_mock/requests", timeout=WAIT_S) as answer:
            return list(json.loads(answer.read()))


@contextmanager
def mock_upstream_process(home: Path, script: dict[str, Any] | None = None) -> Iterator[MockProcess]:
    """``echsd mock-upstream`` as a subprocess (with ``script``, written beside ``home``)."""
    flags: list[str] = []
    if script is not None:
        path = home / "mock-script.json"
        path.write_text(json.dumps(script))
        flags = ["--script", str(path)]
    process = subprocess.Popen([ECHSD, "mock-upstream", *flags], stdout=subprocess.PIPE, text=True, env=clean_env(home))
    try:
        assert process.stdout is not None
        word, port = process.stdout.readline().split()
        assert word == "LISTENING"
        yield MockProcess(int(port))
    finally:
        process.terminate()
        process.wait(WAIT_S)


def serving(state_dir: Path, *extra: str) -> Iterator[Serve]:
    """A fixture's body: ``echsd serve`` on ``state_dir`` for the fixture's life, stopped
    gracefully (and killed if it will not stop)."""
    daemon = Serve(state_dir, *extra)
    try:
        yield daemon
        daemon.terminate()
    finally:
        daemon.kill()


def free_port() -> int:
    """A loopback port nobody listens on right now (for ``--listen tcp://...``)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def echs(
    state_dir: Path | None, *args: str, env: dict[str, str] | None = None, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``echs`` to completion (``state_dir`` None: no --state-dir flag)."""
    flags = ["--state-dir", str(state_dir)] if state_dir is not None else []
    environment = env or clean_env(Path(state_dir or "/nonexistent").parent)
    return subprocess.run([ECHS, *flags, *args], env=environment, input=input, capture_output=True, text=True, timeout=WAIT_S * 2)


async def echs_async(state_dir: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """``echs`` as a child of the trio test, so the test can act while it runs."""
    environment = env or clean_env(state_dir.parent)
    with trio.fail_after(WAIT_S * 2):
        return await trio.run_process(
            [ECHS, "--state-dir", str(state_dir), *args], env=environment, capture_stdout=True, capture_stderr=True, check=False
        )


def json_lines(text: str | bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (text.decode() if isinstance(text, bytes) else text).splitlines() if line.strip()]


def new_thread(state_dir: Path, *args: str) -> str:
    result = echs(state_dir, "new", "--json", *args)
    assert result.returncode == 0, result.stderr
    return str(json.loads(result.stdout)["thread_id"])


@asynccontextmanager
async def client_for(state_dir: Path) -> AsyncIterator[Any]:
    from echsd.wire.client import connect

    async with connect(state_dir=state_dir) as client:
        yield client


async def wait_event(
    client: Any, thread_id: str, predicate: Callable[[dict[str, Any]], bool], since: int = 0, timeout: float = WAIT_S
) -> dict[str, Any]:
    """The first event after ``since`` that matches (replayed or live)."""
    with trio.fail_after(timeout):
        async with client.events(thread_id, since=since) as stream:
            async for event in stream:
                if predicate(event):
                    return event  # type: ignore[no-any-return]
    raise AssertionError("event stream ended")


class LineReader:
    """A streaming ``echs`` subprocess (``events --follow``, ``bb watch``): its JSON Lines,
    parsed as they arrive."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.lines: list[dict[str, Any]] = []
        self._changed = trio.Event()

    async def read(self) -> None:
        assert self.process.stdout is not None
        buffer = b""
        while chunk := await self.process.stdout.receive_some(65536):
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            self.lines.extend(json.loads(line) for line in lines if line.strip())
            self._changed.set()
            self._changed = trio.Event()

    async def wait_until(self, predicate: Callable[[list[dict[str, Any]]], bool]) -> None:
        with trio.fail_after(WAIT_S):
            while not predicate(self.lines):
                await self._changed.wait()


def of_type(kind: str, **data: Any) -> Callable[[dict[str, Any]], bool]:
    return lambda e: e["event"] == kind and all((e.get("data") or {}).get(k) == v for k, v in data.items())


def gate_command(gate: Path) -> str:
    """A shell command that runs until the test creates ``gate`` (a turn kept running on demand).

    Bounded (60 s): where a test kills its daemon with SIGKILL, a leftover never lingers.
    """
    path = shlex.quote(str(gate))
    return f"for i in $(seq 3000); do [ -e {path} ] && break; sleep 0.02; done; [ -e {path} ] && echo gate-open"


class Tmux:
    """A real terminal: a tmux session running one command, read with ``capture-pane``."""

    def __init__(self, socket_dir: Path, command: list[str], env: dict[str, str], width: int = 120, height: int = 40) -> None:
        self.tmux = shutil.which("tmux") or "/usr/bin/tmux"
        self.socket = str(socket_dir / "tmux.sock")
        script = " ".join(shlex.quote(part) for part in command) + "; echo EXITED $?; sleep 600"
        # A fresh server per session: it (and the command) get exactly ``env``.
        self._run("new-session", "-d", "-x", str(width), "-y", str(height), script, env=env)

    def _run(self, *args: str, env: dict[str, str] | None = None) -> str:
        result = subprocess.run(
            [self.tmux, "-S", self.socket, "-f", "/dev/null", *args], env=env, capture_output=True, text=True, timeout=WAIT_S
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    def keys(self, *keys: str) -> None:
        self._run("send-keys", "-t", "0", *keys)

    def type(self, text: str) -> None:
        self._run("send-keys", "-t", "0", "-l", text)

    def screen(self, escapes: bool = False) -> str:
        return self._run("capture-pane", "-p", *(["-e"] if escapes else []), "-t", "0", "-S", "-200")

    def wait_for(self, predicate: Callable[[str], bool] | str, timeout: float = WAIT_S) -> str:
        """Poll the screen until ``predicate`` (or the text) holds; fail with the screen."""
        check = (lambda s: predicate in s) if isinstance(predicate, str) else predicate
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if check(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for the terminal; screen:\n{screen}")
            time.sleep(0.05)  # polling interval of the screen, bounded by the deadline

    async def await_for(self, predicate: Callable[[str], bool] | str, timeout: float = WAIT_S) -> str:
        return await trio.to_thread.run_sync(self.wait_for, predicate, timeout)

    def close(self) -> None:
        subprocess.run([self.tmux, "-S", self.socket, "kill-server"], capture_output=True, timeout=WAIT_S)


def run_in_pty(args: list[str], env: dict[str, str], *, stderr_too: bool = True) -> tuple[int, bytes, bytes]:
    """Run a command with a real terminal (a pty) as stdout (and stderr, unless
    ``stderr_too`` is False: then a pipe); (exit code, the terminal's bytes, stderr's)."""
    import pty

    master, slave = pty.openpty()
    process = subprocess.Popen(
        args, env=env, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave if stderr_too else subprocess.PIPE
    )
    os.close(slave)
    import select

    screen = b""
    deadline = time.monotonic() + WAIT_S * 2
    while time.monotonic() < deadline:
        if not select.select([master], [], [], max(0.0, deadline - time.monotonic()))[0]:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer closed the terminal
            break
        if not chunk:
            break
        screen += chunk
    os.close(master)
    err = process.stderr.read() if process.stderr is not None else b""
    return process.wait(WAIT_S), screen, err
