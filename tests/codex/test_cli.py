"""``echsd probe`` and ``echsd mock-upstream`` as real subprocesses."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
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


async def echsd(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    with trio.fail_after(30):
        return await trio.run_process([*ECHSD, *args], env=env, capture_stdout=True, capture_stderr=True, check=False)


async def test_models_json_lists_the_catalog_with_config_overrides(env: dict[str, str], tmp_path: Path) -> None:
    result = await echsd(env, "models", "--json")
    assert result.returncode == 0, result.stderr
    models = {entry["model"]: entry for entry in json.loads(result.stdout)}
    for entry in models.values():
        assert {"model", "reasoning", "context_window", "efforts", "default_effort", "prices", "auto_compact_tokens"} <= set(entry)
    assert models["gpt-5.5"]["reasoning"] is True and models["gpt-5.5"]["context_window"] == 272000
    assert models["gpt-6.1-sol"]["default_for"] == ["openai", "codex"] and models["gpt-5.5"]["default_for"] == []
    assert models["gpt-5.5"]["prices"] == {"input": 5.0, "cached_input": 0.5, "output": 30.0}
    assert {f"gpt-6{suffix}" for suffix in ("-astra", ".1-sol", ".1-terra", "-sol", "-luna")} <= set(models)
    assert models["gpt-6.1-sol"]["source"] == "family gpt-6+shipped" and models["gpt-6.1-sol"]["sources"]["efforts"] == "family gpt-6"
    assert models["gpt-6.1-sol"]["sources"]["default_effort"] == "shipped" and models["gpt-6.1-sol"]["efforts"][-1] == "ultra"
    assert models["gpt-4.1"]["reasoning"] is False and models["gpt-4.1"]["efforts"] == []
    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text('[models."my-llm"]\ncontext_window = 8192\n[models."gpt-5.5"]\ncontext_window = 400000\n')
    overridden = {e["model"]: e for e in json.loads((await echsd(env, "models", "--json")).stdout)}
    assert overridden["my-llm"]["context_window"] == 8192 and overridden["my-llm"]["source"] == "config"
    assert overridden["gpt-5.5"]["context_window"] == 400000 and overridden["gpt-5.5"]["source"] == "family gpt-5+shipped+config"
    assert overridden["gpt-5.5"]["sources"]["context_window"] == "config"
    table = (await echsd(env, "models")).stdout.decode()
    assert table.splitlines()[0].startswith("MODEL") and "SOURCE" in table.splitlines()[0] and "my-llm" in table
    sol = next(line for line in table.splitlines() if line.startswith("gpt-6.1-sol "))
    assert "default for openai, codex" in sol and "family gpt-6+shipped" in sol
    (state / "config.toml").write_text('[models."my-llm"]\ncontext_window = -1\n')
    bad = await echsd(env, "models")
    assert bad.returncode == 2 and "models.'my-llm'.context_window" in one_line(bad)


async def test_probe_without_credentials_refuses_the_implicit_mock(env: dict[str, str]) -> None:
    result = await probe(env, key=None)
    line = one_line(result)
    assert result.returncode == 1 and result.stdout == b""
    assert "no model credentials found" in line and "--provider mock" in line


async def test_probe_reports_the_catalog_and_the_fields_sent(env: dict[str, str]) -> None:
    async with mock_process(env) as url:
        result = await probe(env, "--provider", "openai", "--base-url", url, "--model", "gpt-5.1", "hi")
        assert result.returncode == 0 and result.stdout == b"mock reply to: hi\n"
        report = result.stderr.decode().splitlines()
        assert report[0].startswith("echsd probe: model gpt-5.1: reasoning: none low medium* high; summary auto, custom tools")
        assert "window 272,000 tokens" in report[0] and "USD/1M in cached out: 1.25 0.125 10" in report[0]
        assert report[1] == (
            "echsd probe: request fields: model, instructions, input, tools, tool_choice, store, stream, "
            "reasoning effort=medium summary=auto, include reasoning.encrypted_content"
        )
        plain = await probe(env, "--provider", "openai", "--base-url", url, "--model", "gpt-4.1", "hi")
        assert plain.returncode == 0 and "reasoning" not in plain.stderr.decode().splitlines()[1]
        unknown = await probe(env, "--provider", "openai", "--base-url", url, "--model", "my-own-llm", "hi")
        assert unknown.returncode == 0 and "not in the catalog" in unknown.stderr.decode()
        unverified = 'hi\nmock: {"endpoint": {"org_verified": false}}'
        fallback = await probe(env, "--provider", "openai", "--base-url", url, "--model", "gpt-5.4", unverified)
        assert fallback.returncode == 0 and "resent without reasoning.summary: " in fallback.stderr.decode()


async def test_probe_as_codex_against_the_backend_path(env: dict[str, str], tmp_path: Path) -> None:
    codex = tmp_path / "codex"
    codex.mkdir()
    (codex / "auth.json").write_text(json.dumps({"tokens": {"access_token": "tok-abc", "refresh_token": "r", "account_id": "acct_1"}}))
    async with mock_process(env) as url:
        root = url.removesuffix("/v1")
        result = await probe(env, "--base-url", root + "/backend-api/codex", "hello", key=None)
        assert (result.returncode, result.stdout) == (0, b"mock reply to: hello\n"), result.stderr

        def listed() -> list:
            with urllib.request.urlopen(root + "/_mock/requests", timeout=5) as answer:
                return json.loads(answer.read())
        (entry,) = await trio.to_thread.run_sync(listed)
    assert entry["path"] == "/backend-api/codex/responses"
    headers = entry["headers"]
    assert headers["originator"] == "codex_cli_rs" and headers["user-agent"].startswith("codex_cli_rs/")
    assert " echsd/" in headers["user-agent"] and headers["chatgpt-account-id"] == "acct_1"
    assert entry["body"]["model"] == "gpt-6.1-sol" and entry["body"]["reasoning"]["effort"] == "low"
    assert headers["version"] == "0.169.0" and headers["x-codex-routing-hint"] == "model=gpt-6.1-sol"
