"""Approval rules through the real daemon, wire and CLI: allowed prefixes run without a
request, a compound command never matches a simple prefix, denied prefixes are refused
without asking, "approve for this thread" stops the requests for its prefix in that thread
only, and under ``on-request`` an unanswered request waits past ``approval_timeout_s``,
across ``echs attach`` sessions, until someone answers it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
import trio

from tests.cli.helpers import Serve, Tmux, clean_env, client_for, echs, new_thread, of_type, wait_event
from tests.cli.test_attach import attach, terminals  # noqa: F401 -- the fixture, for the tmux sessions
from tests.helpers import mock_directive

TIMEOUT_S = 0.5  # [tuning] approval_timeout_s of this module's daemon


@pytest.fixture(scope="module")
def ruled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    root = tmp_path_factory.mktemp("ruled")
    state = root / "state"
    state.mkdir(mode=0o700)
    (root / "home").mkdir()
    (state / "config.toml").write_text(
        f'[approval]\nallow = [["echo", "allowed"], "git status"]\ndeny = [["rm"]]\n\n[tuning]\napproval_timeout_s = {TIMEOUT_S}\n'
    )
    daemon = Serve(state, env=clean_env(root / "home"))
    yield daemon
    try:
        daemon.terminate()
    finally:
        daemon.kill()


def shell(cmd: str, **extra: Any) -> dict[str, Any]:
    return {"name": "exec_command", "arguments": {"cmd": cmd, **extra}}


async def turn_events(serve: Serve, tid: str, calls: list[dict[str, Any]], answer: Any = None) -> list[dict[str, Any]]:
    """Run a turn making ``calls`` one by one; ``answer(client, request)`` answers requests."""
    async with client_for(serve.state_dir) as client:
        before = (await client.get_thread(tid)).get("last_seq") or 0
        await client.send(tid, mock_directive([*({"calls": [call]} for call in calls), {"text": "done"}]))
        events: list[dict[str, Any]] = []
        with trio.fail_after(30):
            async with client.events(tid, since=before) as stream:
                async for event in stream:
                    events.append(event)
                    if event["event"] == "approval.requested":
                        assert answer is not None, f"nobody should have been asked: {event['data']}"
                        await answer(client, event["data"])
                    if event["event"] in ("turn.completed", "turn.error", "turn.interrupted"):
                        return events
    raise AssertionError("the turn did not end")


def outputs(events: list[dict[str, Any]]) -> list[str]:
    return [e["data"]["output"] for e in events if e["event"] == "tool.completed"]


async def test_an_allowed_prefix_runs_without_a_request(ruled: Serve, tmp_path: Path) -> None:
    tid = new_thread(ruled.state_dir, "--cwd", str(tmp_path), "--approval", "always")
    events = await turn_events(ruled, tid, [shell("echo allowed here"), shell("git status")])
    assert not [e for e in events if e["event"] == "approval.requested"]
    assert "allowed here" in outputs(events)[0]


async def test_a_compound_command_does_not_match_a_simple_prefix(ruled: Serve, tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    tid = new_thread(ruled.state_dir, "--cwd", str(tmp_path), "--approval", "on-write")
    asked: list[dict[str, Any]] = []

    async def deny(client: Any, request: dict[str, Any]) -> None:
        asked.append(request)
        await client.respond_approval(request["request_id"], "deny")

    commands = ["git status; touch x/after", "git status && touch x/after", "echo allowed $(touch x/after)", "echo allowed > x/after"]
    events = await turn_events(ruled, tid, [shell(command) for command in commands], deny)
    assert [request["arguments"]["cmd"] for request in asked] == commands
    assert not (tmp_path / "x" / "after").exists()
    assert all("denied this call" in output for output in outputs(events))


async def test_a_denied_prefix_is_refused_without_asking(ruled: Serve, tmp_path: Path) -> None:
    (tmp_path / "keep").mkdir()
    tid = new_thread(ruled.state_dir, "--cwd", str(tmp_path), "--approval", "always")
    events = await turn_events(ruled, tid, [shell("rm -rf keep"), shell("echo allowed; rm -rf keep")])
    assert not [e for e in events if e["event"] == "approval.requested"]
    assert all("refused by the approval rule deny [rm]" in output for output in outputs(events))
    assert (tmp_path / "keep").is_dir()
    thread_rule = new_thread(ruled.state_dir, "--cwd", str(tmp_path), "--approval", "never")
    assert echs(ruled.state_dir, "config", thread_rule, "approval_deny=touch").returncode == 0
    events = await turn_events(ruled, thread_rule, [shell("touch made")])
    assert "refused by the approval rule deny [touch]" in outputs(events)[0] and not (tmp_path / "made").exists()


async def test_approve_for_this_thread_stops_requests_for_that_prefix_there_only(ruled: Serve, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    escalate = {"sandbox_permissions": "require_escalated", "justification": "Touch files next door?", "prefix_rule": ["touch"]}
    first = new_thread(ruled.state_dir, "--cwd", str(tmp_path / "outside"), "--approval", "on-request")
    asked: list[dict[str, Any]] = []

    async def always(client: Any, request: dict[str, Any]) -> None:
        asked.append(request)
        answered = echs(ruled.state_dir, "approve", "--always", request["request_id"], "--json")
        assert answered.returncode == 0, answered.stderr
        assert json.loads(answered.stdout)["rule"] == ["touch"]

    calls = [shell(f"touch {outside}/one", **escalate), shell(f"touch {outside}/two", **escalate)]
    events = await turn_events(ruled, first, calls, always)
    assert len(asked) == 1 and asked[0]["rule"] == ["touch"]  # the second one ran without asking
    assert (outside / "one").exists() and (outside / "two").exists()  # both outside the sandbox
    assert any(e["event"] == "approval.resolved" and e["data"].get("always") for e in events)
    config = json.loads(echs(ruled.state_dir, "show", first, "--json").stdout)["config"]
    assert config["approval_allow"] == [["touch"]]

    other = new_thread(ruled.state_dir, "--cwd", str(tmp_path / "outside"), "--approval", "on-request")
    refused: list[dict[str, Any]] = []

    async def deny(client: Any, request: dict[str, Any]) -> None:
        refused.append(request)
        await client.respond_approval(request["request_id"], "deny")

    await turn_events(ruled, other, [shell(f"touch {outside}/three", **escalate)], deny)
    assert len(refused) == 1 and not (outside / "three").exists()  # another thread still asks


async def test_under_on_request_a_request_waits_past_the_timeout_across_attach_sessions(
    ruled: Serve, tmp_path: Path, terminals: list[Tmux]  # noqa: F811
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    tid = new_thread(ruled.state_dir, "--cwd", str(tmp_path), "--approval", "on-request")
    call = shell(f"touch {outside}/late", sandbox_permissions="require_escalated", justification="Needed next door")
    async with client_for(ruled.state_dir) as client:
        await client.send(tid, mock_directive([{"calls": [call]}, {"text": "done"}]))
        asked = await wait_event(client, tid, of_type("approval.requested"))
        first = attach(terminals, ruled.state_dir, tmp_path, tid, ready="approve exec_command? [y/n/a] ›")
        first.keys("C-d")
        await first.await_for("EXITED 0")
        with trio.move_on_after(TIMEOUT_S * 6):  # well past approval_timeout_s: nothing resolves it
            await wait_event(client, tid, of_type("approval.resolved"), since=asked["seq"])
            raise AssertionError("the request was resolved without an answer")
        pending = json.loads(echs(ruled.state_dir, "approvals", tid, "--json").stdout)
        assert [request["request_id"] for request in pending] == [asked["data"]["request_id"]]
        second = attach(terminals, ruled.state_dir, tmp_path, tid, "--last", "0", ready="approve exec_command? [y/n/a] ›")
        second.type("y")
        second.keys("Enter")
        await wait_event(client, tid, of_type("turn.completed"), since=asked["seq"])
    assert (outside / "late").exists()


async def test_under_never_an_unanswered_escalation_is_refused_after_the_timeout(ruled: Serve, tmp_path: Path) -> None:
    """The contrast: a thread whose approval is ``never`` (the default) does not wait
    overnight; its unanswered escalation is refused after ``approval_timeout_s``."""
    outside = tmp_path / "outside"
    outside.mkdir()
    tid = new_thread(ruled.state_dir, "--cwd", str(tmp_path))
    call = shell(f"touch {outside}/late", sandbox_permissions="require_escalated", justification="Needed next door")
    events = await turn_events(ruled, tid, [call], answer=lambda client, request: trio.sleep(0))
    resolved = [e["data"]["decision"] for e in events if e["event"] == "approval.resolved"]
    assert resolved == ["timeout"], resolved
    (output,) = outputs(events)
    assert "nobody answered" in output and "did not run" in output
    assert not (outside / "late").exists()


async def test_config_rules_never_let_an_escalation_out_unasked(ruled: Serve, tmp_path: Path) -> None:
    """``[approval] allow`` has ``echo allowed``: it runs without asking in the sandbox, but
    asked to run outside it, it waits for a person (only the thread's own rules skip that)."""
    tid = new_thread(ruled.state_dir, "--cwd", str(tmp_path), "--approval", "on-request")
    escalate = {"sandbox_permissions": "require_escalated", "justification": "Say it outside?"}
    asked: list[dict[str, Any]] = []

    async def deny(client: Any, request: dict[str, Any]) -> None:
        asked.append(request)
        await client.respond_approval(request["request_id"], "deny")

    events = await turn_events(ruled, tid, [shell("echo allowed in"), shell("echo allowed out", **escalate)], deny)
    inside, outside = outputs(events)
    assert [request["summary"] for request in asked] == ["outside the sandbox: echo allowed out"]
    assert "allowed in" in inside and "did not run" in outside
