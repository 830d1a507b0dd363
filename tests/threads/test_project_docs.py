"""Project instructions and the environment reach the model: the AGENTS.md files from the
repository root down to the thread's cwd (root first, capped), the user's own file first,
and an environment context, as user-role messages in Codex's shapes before the first input;
again, only what changed, when the cwd changes; off per thread or per daemon."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import trio

from echsd.cli.render import Style
from echsd.cli.render_thread import thread_lines
from echsd.threads.context import TurnContext, context_message, environment, is_context_message, sent_record
from echsd.threads.project_docs import discover
from tests.helpers import Watch
from tests.wire.helpers import start_daemon, stop_daemon

ROOT_RULES = "# Repo rules (marker ROOT-RULES-1)\nAlways run the tests.\n"
SUB_RULES = "# Service rules (marker SUB-RULES-2)\nUse tabs here.\n"


def repository(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "repo"
    sub = root / "services" / "api"
    sub.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "AGENTS.md").write_text(ROOT_RULES)
    (sub / "AGENTS.md").write_text(SUB_RULES)
    return root, sub


def texts(message: dict[str, Any]) -> list[str]:
    return [part["text"] for part in message["content"]]


def test_discovery_goes_from_the_repository_root_down_to_the_cwd(tmp_path: Path) -> None:
    root, sub = repository(tmp_path)
    (root / "services" / "AGENTS.override.md").write_text("middle override\n")
    (root / "services" / "AGENTS.md").write_text("not read: the override wins\n")
    user = tmp_path / "config" / "echsd" / "AGENTS.md"
    user.parent.mkdir(parents=True)
    user.write_text("the user's own rules\n")
    docs = discover(str(sub), user, 32 * 1024)
    assert [Path(doc.path) for doc in docs] == [user, root / "AGENTS.md", root / "services" / "AGENTS.override.md", sub / "AGENTS.md"]
    assert [doc.text for doc in docs] == ["the user's own rules\n", ROOT_RULES, "middle override\n", SUB_RULES]
    outside = tmp_path / "loose"
    outside.mkdir()
    (outside / "AGENTS.md").write_text("no repository: the cwd's own\n")
    assert [doc.text for doc in discover(str(outside), None, 1024)] == ["no repository: the cwd's own\n"]


def test_the_cap_cuts_with_a_note_and_leaves_later_files_out(tmp_path: Path) -> None:
    root, sub = repository(tmp_path)
    (root / "AGENTS.md").write_text("é" * 3000)  # 6000 bytes, two a character
    first, second = discover(str(sub), None, 4001)
    assert first.truncated and first.size == 6000 and first.text.startswith("é" * 2000)
    assert "4,001 bytes" in first.text and "1,999 more bytes of this file left out" in first.text
    assert second.truncated and second.text == "" and second.describe() == {"path": str(sub / "AGENTS.md"), "bytes": len(SUB_RULES), "truncated": True}


def test_only_what_changed_is_told_again(tmp_path: Path) -> None:
    root, sub = repository(tmp_path)
    config = {"cwd": str(sub), "approval": "never"}
    first = TurnContext(environment(config, shell="bash", today="2026-11-26", zone="Etc/UTC"), discover(str(sub), None, 32768), "on")
    message = context_message(first, None)
    assert message is not None and is_context_message(message) and message["role"] == "user"
    agents, env = texts(message)
    assert agents.startswith(f"# AGENTS.md instructions for {sub}\n\n<INSTRUCTIONS>\n") and agents.endswith("\n</INSTRUCTIONS>")
    assert agents.index("ROOT-RULES-1") < agents.index("SUB-RULES-2")
    assert env.splitlines()[:5] == [
        "<environment_context>", f"  <cwd>{sub}</cwd>", "  <shell>bash</shell>", "  <current_date>2026-11-26</current_date>", "  <timezone>Etc/UTC</timezone>"
    ]
    assert "  <sandbox_mode>danger-full-access</sandbox_mode>" in env and "  <approval_policy>never</approval_policy>" in env
    assert context_message(first, sent_record(first)) is None
    moved = {"cwd": str(root), "approval": "never"}
    second = TurnContext(environment(moved, shell="bash", today="2026-11-26", zone="Etc/UTC"), discover(str(root), None, 32768), "on")
    agents, env = texts(context_message(second, sent_record(first)))
    assert "ROOT-RULES-1" in agents and "SUB-RULES-2" not in agents
    assert env == f"<environment_context>\n  <cwd>{root}</cwd>\n</environment_context>"
    elsewhere = TurnContext(environment({"cwd": str(tmp_path)}, shell="bash", today="2026-11-27", zone="Etc/UTC"), (), "on")
    agents, env = texts(context_message(elsewhere, sent_record(second)))
    assert "no AGENTS.md file applies here any more" in agents and "<current_date>2026-11-27</current_date>" in env
    assert not is_context_message({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]})


async def send(daemon: Any, tid: str, text: str) -> None:
    async with Watch(daemon, tid) as watch:
        start = watch.last_seq
        await daemon.ops.send(tid, text)
        end = await watch.wait_for(lambda e: e.type in ("turn.completed", "turn.error"), after_seq=start)
    assert end.type == "turn.completed", end.data


def context_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for item in body["input"] if is_context_message(item)]


async def test_the_model_gets_the_rules_and_the_environment_before_the_first_input(
    tmp_path: Path, nursery: trio.Nursery, mock_upstream: Any
) -> None:
    root, sub = repository(tmp_path)
    daemon = await start_daemon(nursery, tmp_path / "state", mock_upstream.base_url, tcp=False)
    tid = (await daemon.ops.create_thread(cwd=str(sub)))["thread_id"]
    await send(daemon, tid, "first")
    body = mock_upstream.requests[-1].body
    context, user = body["input"]
    assert is_context_message(context) and texts(user) == ["first"]
    agents, env = texts(context)
    assert agents.index("ROOT-RULES-1") < agents.index("SUB-RULES-2")  # root first
    assert f"<cwd>{sub}</cwd>" in env and "<shell>bash</shell>" in env
    shown = (await daemon.ops.get_thread(tid))["context"]
    assert [doc["path"] for doc in shown["project_docs"]] == [str(root / "AGENTS.md"), str(sub / "AGENTS.md")]
    assert shown["project_docs_state"] == "on" and shown["environment"]["cwd"] == str(sub)
    lines = thread_lines((await daemon.ops.get_thread(tid)), Style(False))  # what echs show prints
    listed = [line for line in lines if "AGENTS.md" in line]
    assert listed[0].startswith("  agents.md     ") and listed[0].rstrip().endswith(f"{len(ROOT_RULES)} bytes")
    assert "repo/AGENTS.md" in listed[0] and "services/api/AGENTS.md" in listed[1]

    await send(daemon, tid, "second")  # nothing changed: nothing told again
    assert len(context_messages(mock_upstream.requests[-1].body)) == 1

    await daemon.ops.configure(tid, {"cwd": str(root)})
    await send(daemon, tid, "third")
    body = mock_upstream.requests[-1].body
    assert len(context_messages(body)) == 2 and texts(body["input"][-1]) == ["third"]
    agents, env = texts(body["input"][-2])
    assert env == f"<environment_context>\n  <cwd>{root}</cwd>\n</environment_context>"  # the new cwd, once
    assert "ROOT-RULES-1" in agents and "SUB-RULES-2" not in agents
    await send(daemon, tid, "fourth")
    assert len(context_messages(mock_upstream.requests[-1].body)) == 2
    await stop_daemon(daemon)


async def test_project_docs_can_be_turned_off_per_thread_and_per_daemon(tmp_path: Path, nursery: trio.Nursery, mock_upstream: Any) -> None:
    _root, sub = repository(tmp_path)
    daemon = await start_daemon(nursery, tmp_path / "state", mock_upstream.base_url, tcp=False)
    tid = (await daemon.ops.create_thread(cwd=str(sub), project_docs=False))["thread_id"]
    await send(daemon, tid, "hi")
    (context,) = context_messages(mock_upstream.requests[-1].body)
    assert [text.split("\n")[0] for text in texts(context)] == ["<environment_context>"]  # the environment, no rules
    assert (await daemon.ops.get_thread(tid))["context"]["project_docs_state"] == "off (the thread's project_docs)"
    await daemon.ops.configure(tid, {"project_docs": True})
    await send(daemon, tid, "now with rules")
    assert "SUB-RULES-2" in texts(context_messages(mock_upstream.requests[-1].body)[-1])[0]
    await stop_daemon(daemon)

    (tmp_path / "state2").mkdir()
    (tmp_path / "state2" / "config.toml").write_text("[tuning]\nproject_docs = false\n")
    daemon = await start_daemon(nursery, tmp_path / "state2", mock_upstream.base_url, tcp=False)
    tid = (await daemon.ops.create_thread(cwd=str(sub)))["thread_id"]
    await send(daemon, tid, "hi")
    (context,) = context_messages(mock_upstream.requests[-1].body)
    assert "AGENTS.md" not in texts(context)[0] and (await daemon.ops.get_thread(tid))["context"]["project_docs_state"] == "off ([tuning] project_docs)"
    await stop_daemon(daemon)
