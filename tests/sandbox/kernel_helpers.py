"""Run a confining snippet in a fresh Python process (a restriction can never be lifted, so
the test process itself must stay unconfined) and read what it reports."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from contextlib import contextmanager
from typing import Any, Iterator

import pytest

from echsd.tools.sandbox import landlock

PRELUDE = """
import errno, json, os, socket, sys
from echsd.tools.sandbox import landlock, libc, namespaces, seccomp

def attempt(action):
    try:
        action()
        return "ok"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))

def write(path):
    with open(path, "w") as handle:
        handle.write("x")

def connect(port):
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass
"""


def run_snippet(code: str, *args: Any) -> dict[str, Any]:
    """Run ``code`` (which prints one JSON object last) with ``args`` as ``sys.argv[1:]``."""
    done = subprocess.run([sys.executable, "-c", PRELUDE + code, *map(str, args)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def require_landlock(abi: int = 1) -> int:
    found = landlock.abi_version()
    if found < abi:
        pytest.skip(f"needs Landlock ABI {abi}, this kernel offers {found}")
    return found


@contextmanager
def tcp_server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that accepts and closes connections; yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                conn.close()
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        server.close()
