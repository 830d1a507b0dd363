"""``echsd probe`` and ``echsd mock-upstream`` as real subprocesses."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

import pytest
import trio

ECHSD = [sys.executable, "-c", "from echsd.cli.echsd_main import main; main()"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ECHS_", "OPENAI_", "CODEX_"))}
    clean.update(HOME=str(tmp_path), CODEX_HOME=str(tmp_path / "codex"), ECHS_STATE_DIR=str(tmp_path / "state"))
    return clean


@asynccontextmanager
async def mock_process(env: dict[str, str], *args: str) -> AsyncIterator[str]:
    """``echsd mock-upstream`` in a subprocess; yields its base URL, stops it with SIGTERM."""
    proc = await trio.lowlevel.open_process([*ECHSD, "mock-upstream", *args], stdout=subprocess.PIPE, env=env)
    try:
        line = b""
        with trio.fail_after(15):
            while not line.endswith(b"\n"):
                chunk = await proc.stdout.receive_some(100)
                assert chunk, "mock-upstream exited before LISTENING"
                line += chunk
        word, port = line.decode().split()
        assert word == "LISTENING"
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.send_signal(signal.SIGTERM)
        with trio.fail_after(10):
            code = await proc.wait()
        await proc.stdout.aclose()
    assert code == 0


async def probe(env: dict[str, str], *args: str, key: str | None = "any-key") -> subprocess.CompletedProcess[bytes]:
    run_env = dict(env, **({"OPENAI_API_KEY": key} if key else {}))
    with trio.fail_after(30):
        return await trio.run_process([*ECHSD, "probe", *args], env=run_env, capture_stdout=True, capture_stderr=True, check=False)


def one_line(result: subprocess.CompletedProcess[bytes]) -> str:
    text = result.stderr.decode()
    assert text.endswith("\n") and text.count("\n") == 1, text
    return text


async def test_probe_against_mock_upstream_process(env: dict[str, str], tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rules": [{"match": "weather", "steps": [{"text": "Sunny all day."}]}]}))
    async with mock_process(env, "--script", str(script)) as url:
        ok = await probe(env, "--provider", "openai", "--base-url", url, "ping pong")
        assert (ok.returncode, ok.stdout, ok.stderr) == (0, b"mock reply to: ping pong\n", b"")
        scripted = await probe(env, "--provider", "openai", "--base-url", url, "how is the weather?")
        assert (scripted.returncode, scripted.stdout) == (0, b"Sunny all day.\n")
        cut = await probe(env, "--provider", "openai", "--base-url", url, 'x\nmock: {"text": "a b c d", "fault": "drop", "after_deltas": 2}')
        assert cut.returncode == 1 and cut.stdout == b"a b \n"
        assert "cut off" in one_line(cut)
        bad = await probe(env, "--provider", "openai", "--base-url", url, 'x\nmock: {"fault": "malformed"}')
        assert bad.returncode == 1 and "malformed" in one_line(bad)
        limited = await probe(env, "--provider", "openai", "--base-url", url, 'x\nmock: {"fault": "http", "status": 429}')
        assert limited.returncode == 1 and "rate limited after 3 attempts" in one_line(limited)
        failed = await probe(env, "--provider", "openai", "--base-url", url, 'x\nmock: {"fault": "failed", "code": "invalid_prompt", "message": "flagged"}')
        assert failed.returncode == 1 and one_line(failed) == "echsd probe: upstream error (response_failed): flagged\n"


async def test_probe_with_the_builtin_mock(env: dict[str, str]) -> None:
    result = await probe(env, "--provider", "mock", key=None)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"mock reply to: Say hello in five words.\n", b"")


async def test_probe_dead_port_names_the_url(env: dict[str, str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = await probe(env, "--provider", "openai", "--base-url", f"http://127.0.0.1:{port}/v1")
    line = one_line(result)
    assert result.returncode == 1 and result.stdout == b""
    assert "connection refused" in line and f"http://127.0.0.1:{port}/v1/responses" in line


async def test_probe_bad_credentials(env: dict[str, str]) -> None:
    async with mock_process(env, "--require-token", "the-right-token") as url:
        result = await probe(env, "--provider", "openai", "--base-url", url, key="the-wrong-token")
        line = one_line(result)
        assert result.returncode == 1 and line.startswith("echsd probe: bad credentials") and "HTTP 401" in line
        assert "the-wrong-token" not in line
        good = await probe(env, "--provider", "openai", "--base-url", url, key="the-right-token")
        assert good.returncode == 0


async def test_mock_upstream_rejects_a_bad_script(env: dict[str, str], tmp_path: Path) -> None:
    script = tmp_path / "bad.json"
    script.write_text('{"rules": [{"match": "x", "steps": [{"txet": "typo"}]}]}')
    with trio.fail_after(30):
        result = await trio.run_process([*ECHSD, "mock-upstream", "--script", str(script)], env=env, capture_stdout=True, capture_stderr=True, check=False)
    assert result.returncode == 2 and "unknown step field 'txet'" in one_line(result)
