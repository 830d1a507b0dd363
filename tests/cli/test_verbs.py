"""Every ``echs`` verb against a real daemon: ``--json`` shapes (CONTRACT.md 2.5), the
human output, exit codes 0/1/2, and where the connection options come from."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import Serve, clean_env, client_for, echs, echs_async, json_lines, new_thread
from tests.helpers import conversation, mock_directive

THREAD_ID = re.compile(r"^thr_[0-9a-f]{16}$")
THREAD_FIELDS = {"thread_id", "state", "parent", "children", "config", "queued", "usage", "created_at"}
CONFIG_FIELDS = {"cwd", "model", "reasoning", "instructions", "tools"}


def ok_json(state: Path, *args: str) -> Any:
    """Run a verb with --json after it; stdout must be exactly one JSON document."""
    result = echs(state, *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_status(state: Path) -> None:
    status = ok_json(state, "status")
    assert {"version", "provider", "model", "uptime_s", "threads"} <= set(status)
    assert {"total", "running", "idle", "paused"} <= set(status["threads"])
    assert status["provider"] == "mock"
    human = echs(state, "status")
    assert human.returncode == 0 and "mock" in human.stdout and "threads" in human.stdout
    assert "\x1b[" not in human.stdout  # not a terminal: no colour


def test_new_ls_show(state: Path, tmp_path: Path) -> None:
    created = ok_json(
        state,
        "new",
        "--cwd",
        str(tmp_path),
        "--model",
        "m-1",
        "--reasoning",
        "low",
        "--instructions",
        "be brief",
        "--tools",
        "-exec_command",
    )
    assert set(created) == {"thread_id"} and THREAD_ID.match(created["thread_id"])
    tid = created["thread_id"]

    shown = ok_json(state, "show", tid)
    assert THREAD_FIELDS <= set(shown) and CONFIG_FIELDS <= set(shown["config"])
    assert shown["config"]["cwd"] == str(tmp_path) and shown["config"]["model"] == "m-1"
    assert shown["config"]["reasoning"] == "low" and "exec_command" not in shown["config"]["tools"]
    assert shown["parent"] is None and shown["children"] == [] and shown["state"] == "idle"

    listed = ok_json(state, "ls")
    assert isinstance(listed, list) and tid in [t["thread_id"] for t in listed]
    assert all(THREAD_FIELDS <= set(t) for t in listed)

    human_ls = echs(state, "ls").stdout
    assert human_ls.splitlines()[0].split()[:2] == ["THREAD", "STATE"] and tid in human_ls
    human_show = echs(state, "show", tid).stdout
    assert tid in human_show and "reasoning low" in human_show and "be brief" in human_show
    plain = echs(state, "new")
    assert plain.returncode == 0 and THREAD_ID.match(plain.stdout.strip())
    assert ok_json(state, "show", plain.stdout.strip())["config"]["cwd"] == str(Path(__file__).parents[2])  # echs's own cwd


def test_json_before_and_after_the_verb_agree(state: Path) -> None:
    tid = new_thread(state)
    before = echs(state, "--json", "show", tid)
    after = echs(state, "show", tid, "--json")
    assert before.returncode == after.returncode == 0
    assert json.loads(before.stdout) == json.loads(after.stdout)


def test_config(state: Path, tmp_path: Path) -> None:
    tid = new_thread(state)
    thread = ok_json(
        state, "config", tid, "model=gpt-x", "reasoning=high", "instructions=short answers", f"cwd={tmp_path}", "tools=-exec_command"
    )
    assert THREAD_FIELDS <= set(thread)
    config = thread["config"]
    assert (config["model"], config["reasoning"], config["instructions"], config["cwd"]) == (
        "gpt-x",
        "high",
        "short answers",
        str(tmp_path),
    )
    assert "exec_command" not in config["tools"]
    assert "exec_command" in ok_json(state, "config", tid, "tools=+exec_command")["config"]["tools"]

    for bad in (["model"], ["colour=red"], ["reasoning=huge"], []):
        result = echs(state, "config", tid, *bad)
        assert result.returncode == 2, (bad, result.stderr)
        assert result.stdout == ""
    refused = echs(state, "config", tid, "tools=+no_such_tool")  # the daemon refuses it
    assert refused.returncode == 1 and "no_such_tool" in refused.stderr


def test_send_without_wait_prints_the_ack(state: Path) -> None:
    tid = new_thread(state)
    ack = ok_json(state, "send", tid, "hello", "--id", "msg-1")
    assert {"input_id", "disposition", "thread_id"} <= set(ack)
    assert ack["disposition"] == "started" and ack["thread_id"] == tid
    again = ok_json(state, "send", tid, "hello", "--id", "msg-1")
    assert again["input_id"] == ack["input_id"]
    human = echs(state, "send", tid, "more", "--queue")
    assert human.returncode == 0 and "in_" in human.stdout
    assert echs(state, "send", tid, "x", "--queue", "--steer").returncode == 2
    piped = echs(state, "send", tid, "-", "--wait", input="from stdin")
    assert piped.returncode == 0 and "mock reply to: from stdin" in piped.stdout


def test_send_wait_streams_the_reply(state: Path) -> None:
    tid = new_thread(state)
    result = echs(state, "send", tid, "hello there", "--wait")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "mock reply to: hello there\n"

    lines = echs(state, "send", tid, "second", "--wait", "--json")
    assert lines.returncode == 0
    events = json_lines(lines.stdout)
    assert events[-1]["event"] == "turn.completed"
    assert events[0]["event"] == "input.delivered"
    turn = events[0]["data"]["turn_id"]
    assert all(e["data"].get("turn_id") == turn for e in events)
    assert "".join(e["data"]["delta"] for e in events if e["event"] == "turn.delta") == "mock reply to: second"
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(set(seqs))


def test_send_wait_turn_error_exits_4(state: Path) -> None:
    tid = new_thread(state)
    result = echs(state, "send", tid, mock_directive({"fault": "failed", "code": "context_length_exceeded"}), "--wait")
    assert result.returncode == 4, (result.stdout, result.stderr)
    assert "turn failed" in result.stderr
    as_json = echs(state, "send", tid, mock_directive({"fault": "failed", "code": "context_length_exceeded"}), "--wait", "--json")
    assert as_json.returncode == 4
    assert json_lines(as_json.stdout)[-1]["event"] == "turn.error"


def test_control_verbs(state: Path) -> None:
    tid = new_thread(state)
    interrupted = ok_json(state, "interrupt", tid)
    assert interrupted["interrupted"] is False
    assert ok_json(state, "interrupt", tid, "--clear-queue")["interrupted"] is False
    assert ok_json(state, "pause", tid)["state"] == "paused"
    queued = ok_json(state, "send", tid, "while paused")
    assert queued["disposition"] == "queued"
    assert ok_json(state, "show", tid)["queued"] == 1
    assert ok_json(state, "interrupt", tid, "--clear-queue")["cleared"] == 1
    assert ok_json(state, "resume", tid)["state"] == "idle"
    assert echs(state, "resume", tid).returncode == 0  # not paused: succeeds, changes nothing
    assert echs(state, "send", tid, "after resume", "--wait").returncode == 0

    compacted = ok_json(state, "compact", tid)
    assert compacted["thread_id"] == tid and {"items_before", "items_after"} <= set(compacted)

    killed = ok_json(state, "kill", tid)
    assert killed["thread_id"] == tid and tid in killed["killed"]
    again = echs(state, "kill", tid)  # idempotent, like pause on a paused thread
    assert again.returncode == 0 and again.stdout == f"{tid} is already killed\n"
    assert ok_json(state, "kill", tid) == {"thread_id": tid, "state": "killed", "killed": []}
    for verb in ("pause", "resume", "interrupt"):  # control of a killed thread: invalid_state
        refused = echs(state, verb, tid)
        assert refused.returncode == 1 and "killed" in refused.stderr, verb
    assert echs(state, "send", tid, "too late").returncode == 1
    assert "paused" in echs(state, "pause", new_thread(state)).stdout


def test_history(state: Path) -> None:
    tid = new_thread(state)
    steps = [{"text": "looking", "calls": [{"name": "exec_command", "arguments": {"cmd": "printf 'a\\nb\\n'"}}]}, {"text": "Done."}]
    assert echs(state, "send", tid, mock_directive(steps), "--wait").returncode == 0
    items = conversation(ok_json(state, "history", tid))
    assert [item["type"] for item in items] == ["message", "message", "function_call", "function_call_output", "message"]
    human = echs(state, "history", tid).stdout
    assert "user ›" in human and "assistant ›" in human and "call › exec_command(cmd=" in human and "output ›" in human


def test_events(state: Path) -> None:
    tid = new_thread(state)
    assert echs(state, "send", tid, "one", "--wait").returncode == 0
    result = echs(state, "events", tid, "--json")
    assert result.returncode == 0
    events = json_lines(result.stdout)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert all({"event", "thread_id", "seq", "ts", "data"} <= set(e) for e in events)
    assert events[0]["event"] == "thread.created" and events[-1]["event"] == "thread.state"
    later = json_lines(echs(state, "events", tid, "--since", "3", "--json").stdout)
    assert [e["seq"] for e in later] == list(range(4, len(events) + 1))
    human = echs(state, "events", tid).stdout.splitlines()
    assert len(human) == len(events) and "turn.completed" in human[-2]


def test_unknown_thread_and_usage_errors(state: Path) -> None:
    missing = echs(state, "show", "thr_0000000000000000", "--json")
    assert missing.returncode == 1 and missing.stdout == "" and missing.stderr.startswith("echs: ")
    assert echs(state, "show").returncode == 2
    assert echs(state, "ls", "--bogus").returncode == 2
    assert echs(state, "frobnicate").returncode == 2
    assert echs(state, "--socket", "/x", "--url", "ws://127.0.0.1:1", "ls").returncode == 2
    assert echs(state, "events", "thr_0000000000000000", "--since", "-1").returncode == 2
    assert echs(state, "new", "--reasoning", "extreme").returncode == 2


def test_no_daemon_exits_1(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("t" * 32)
    for args in (["status"], ["ls", "--json"], ["send", "thr_0000000000000000", "hi", "--wait"]):
        result = echs(tmp_path, *args)
        assert result.returncode == 1, args
        assert "cannot reach the daemon" in result.stderr and result.stdout == ""
    no_token = echs(tmp_path / "nowhere", "status")
    assert no_token.returncode == 1 and "token" in no_token.stderr


def test_connection_options_from_flags_and_env(state: Path, serve: Serve) -> None:
    socket, token_file = state / "echsd.sock", state / "token"
    env = clean_env(state.parent)
    by_flags = echs(None, "--socket", str(socket), "--token-file", str(token_file), "status", "--json", env=env)
    assert by_flags.returncode == 0, by_flags.stderr
    by_env = echs(None, "status", "--json", env=clean_env(state.parent, ECHS_SOCKET=str(socket), ECHS_TOKEN=token_file.read_text().strip()))
    assert by_env.returncode == 0, by_env.stderr
    by_state_env = echs(None, "status", env=clean_env(state.parent, ECHS_STATE_DIR=str(state)))
    assert by_state_env.returncode == 0
    port = next(a for a in serve.extra if a.startswith("tcp://")).rsplit(":", 1)[1]
    by_url = echs(None, "--url", f"ws://127.0.0.1:{port}", "--token-file", str(token_file), "status", env=env)
    assert by_url.returncode == 0, by_url.stderr
    by_url_env = echs(None, "ls", env=clean_env(state.parent, ECHS_URL=f"ws://127.0.0.1:{port}", ECHS_TOKEN_FILE=str(token_file)))
    assert by_url_env.returncode == 0, by_url_env.stderr
    wrong_token = echs(None, "status", env=clean_env(state.parent, ECHS_SOCKET=str(socket), ECHS_TOKEN="wrong" * 8))
    assert wrong_token.returncode == 1 and wrong_token.stderr.startswith("echs: ")


@pytest.mark.parametrize("verb", ["status", "ls"])
def test_only_client_modules_are_imported(state: Path, verb: str) -> None:
    """Startup stays instant: no daemon, store, codex, threads, tools, prompt_toolkit, and no
    event loop at all (one-shot verbs use the blocking client, not trio); ``status`` not
    even the op table (the client's methods are made on first use) nor a TOML parser."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from echsd.cli.echs_main import cli\n"
        f"try:\n    cli([{verb!r}, '--json'])\n"
        "except SystemExit as done:\n    assert done.code == 0, done.code\n"
        "watched = ('echsd', 'prompt_toolkit', 'structlog', 'apsw', 'httpx', 'trio', 'tomllib')\n"
        "sys.stderr.write(' '.join(sorted(m for m in sys.modules if m.startswith(watched))))\n"
    )
    env = clean_env(state.parent, ECHS_STATE_DIR=str(state))  # as found by default: no settings but that
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=30)
    assert result.returncode == 0, result.stderr
    loaded = result.stderr.split()
    assert "echsd.wire.blocking" in loaded
    heavy = [
        m
        for m in loaded
        if m.startswith(("echsd.daemon", "echsd.store", "echsd.codex", "echsd.threads", "echsd.tools", "prompt_toolkit", "apsw", "httpx", "trio"))
    ]
    assert heavy == []
    if verb == "status":
        assert [m for m in loaded if m.startswith(("echsd.ops", "echsd.wire.schema", "tomllib"))] == []
    else:
        assert "echsd.wire.schema" in loaded  # ls calls a method: the table is made then


async def test_ls_and_show_give_a_thread_s_name(state: Path) -> None:
    async with client_for(state) as client:
        tid = (await client.request("thread.create", {}))["thread_id"]
        await client.request("thread.rename", {"thread_id": tid, "name": "fix the flaky test"})
    listed = (await echs_async(state, "ls")).stdout.decode()
    header, *rows = listed.splitlines()
    assert header.split()[:3] == ["THREAD", "STATE", "NAME"]
    assert any(row.startswith(tid) and "fix the flaky test" in row for row in rows)
    shown = (await echs_async(state, "show", tid)).stdout.decode()
    assert "  name          fix the flaky test" in shown.splitlines()
    assert ok_json(state, "show", tid)["name"] == "fix the flaky test"
