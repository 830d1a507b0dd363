"""What echsd sends, compared field by field with what the Codex CLI 0.169 sends in the same
situation (``../shared/conformance/codex-0.169/requests/``, read where present).

Each scenario runs through a real daemon against our mock upstream; the request it records
is reduced to its shape (header names, body fields, item kinds in order, tool names and
argument schemas without descriptions) and compared with Codex's. Every difference must be
a row of the table in docs/endpoints.md (its first cell names it: ``header:NAME``,
``field:NAME``, ``tool:NAME``, ``schema:NAME``, ``item:KIND``), and every row must still be
a difference somewhere: the table neither hides nor invents one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio

from echsd.codex.mock import open_mock_upstream
from echsd.daemon import Daemon
from echsd.settings import load_settings
from tests.helpers import Watch, mock_directive

REPO = Path(__file__).resolve().parents[2]
CAPTURES = REPO.parent / "shared" / "conformance" / "codex-0.169" / "requests"
TABLE = REPO / "docs" / "endpoints.md"
TRANSPORT = {"host", "content-length", "connection", "accept-encoding", "transfer-encoding"}  # the HTTP client's, not the protocol's
SET_ASIDE = {"developer", "additional_tools", "compaction_trigger"}  # Codex items with no counterpart (rows in the table)

pytestmark = pytest.mark.skipif(not CAPTURES.is_dir(), reason=f"no Codex captures at {CAPTURES}")

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201"
    "a5f5e3b00000000049454e44ae426082"
)
PATCH = "*** Begin Patch\n*** Add File: notes.txt\n+hello\n*** End Patch\n"
EXEC = {"name": "exec_command", "arguments": {"cmd": "echo hi", "yield_time_ms": 1000}}


@dataclass(frozen=True)
class Scenario:
    name: str
    provider: str = "openai"  # or "codex": the ChatGPT backend
    model: str = "gpt-5.5"
    reasoning: str | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)  # the mock's script for the turn
    request: int = 0  # which of the turn's requests Codex's capture is (-1: the last)
    compaction: bool = False


SCENARIOS = [
    Scenario("s1a_text_gpt55_default"),
    Scenario("s1b_text_gpt55_high", reasoning="high"),
    Scenario("s1c_text_gpt41", model="gpt-4.1"),
    Scenario("s1d_text_gpt56sol", model="gpt-5.6-sol"),
    Scenario("s1e_text_gpt6sol_uncatalogued", model="gpt-6-sol"),
    Scenario("s2_tool_first", steps=[{"reasoning": "plan", "calls": [EXEC]}, {"text": "ran"}]),
    Scenario("s2_tool_followup", steps=[{"reasoning": "plan", "calls": [EXEC]}, {"text": "ran"}], request=1),
    Scenario(
        "s3_apply_patch_view_image_final",
        steps=[{"calls": [{"name": "apply_patch", "input": PATCH}]}, {"calls": [{"name": "view_image", "arguments": {"path": "pixel.png"}}]}, {"text": "done"}],
        request=-1,
    ),
    Scenario(
        "s3_exec_pty_write_stdin_final",
        steps=[
            {"calls": [{"name": "exec_command", "arguments": {"cmd": "cat", "tty": True, "yield_time_ms": 500}}]},
            {"calls": [{"name": "write_stdin", "arguments": {"session_id": "$SESSION_ID", "chars": "\u0004", "yield_time_ms": 1000}}]},
            {"text": "done"},
        ],
        request=-1,
    ),
    Scenario("s3_collab_v2_tools"),
    Scenario("s5_chatgpt_text", provider="codex"),
    Scenario("s5_chatgpt_tool_followup", provider="codex", steps=[{"reasoning": "plan", "calls": [EXEC]}, {"text": "ran"}], request=1),
    Scenario("s5_openai_builtin_apikey"),
    Scenario("s6_compaction_trigger_v2", compaction=True),
]


# ---- shapes ------------------------------------------------------------------------------


def tool_leaves(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Tools by name; a namespace's tools as ``namespace.tool``."""
    found: dict[str, dict[str, Any]] = {}
    for tool in tools:
        if tool.get("type") == "namespace":
            found.update({f"{tool['name']}.{name}": inner for name, inner in tool_leaves(tool.get("tools", [])).items()})
        else:
            found[str(tool.get("name") or tool.get("type"))] = tool
    return found


def schema(tool: dict[str, Any]) -> Any:
    """A tool's argument schema (or a freeform tool's grammar), its prose left out."""

    def bare(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: bare(inner) for key, inner in value.items() if key != "description"}
        return [bare(inner) for inner in value] if isinstance(value, list) else value

    return [tool.get("type"), bare(tool.get("parameters")), bare(tool.get("format"))]


def item_kind(item: dict[str, Any]) -> str:
    kind = str(item.get("type", "message"))
    if kind != "message":
        return kind
    parts = ",".join(str(part.get("type")) for part in item.get("content", []) if isinstance(part, dict))
    return f"message:{item.get('role')}[{parts}]"


def set_aside(item: dict[str, Any]) -> str | None:
    """The kind of a Codex item that has no counterpart in echsd's requests, else None."""
    kind = str(item.get("type", "message"))
    kind = str(item.get("role")) if kind == "message" else kind
    return kind if kind in SET_ASIDE else None


def differences(codex: dict[str, Any], ours: dict[str, Any], *, compaction: bool = False) -> set[str]:
    """The names of every way ``ours`` differs from ``codex`` in shape."""
    found: set[str] = set()
    theirs_headers = {name.lower() for name in codex["headers"]} - TRANSPORT
    our_headers = {name.lower() for name in ours["headers"]} - TRANSPORT
    found |= {f"header:{name}" for name in theirs_headers ^ our_headers}
    their_items, our_items = codex["body"]["input"], ours["body"]["input"]
    for item in their_items:
        if set_aside(item):
            found.add(f"item:{set_aside(item)}")
    kept = [item_kind(item) for item in their_items if not set_aside(item)]
    if kept != [item_kind(item) for item in our_items]:
        found.add("item:order")  # never a row: the items must agree
    if compaction:  # a different request altogether: the compact call (one row says why)
        return found | {"compaction:endpoint"}
    theirs, body = codex["body"], ours["body"]
    found |= {f"field:{name}" for name in set(theirs) ^ set(body)}
    for name in ("reasoning", "text"):
        if isinstance(theirs.get(name), dict) and isinstance(body.get(name), dict):
            found |= {f"field:{name}.{key}" for key in set(theirs[name]) ^ set(body[name])}
    their_tools, our_tools = dict(tool_leaves(theirs.get("tools", []))), tool_leaves(body.get("tools", []))
    for item in their_items:
        if item.get("type") == "additional_tools":
            their_tools.update(tool_leaves(item.get("tools", [])))
    found |= {f"tool:{name}" for name in set(their_tools) ^ set(our_tools)}
    found |= {f"schema:{name}" for name in set(their_tools) & set(our_tools) if schema(their_tools[name]) != schema(our_tools[name])}
    return found


def documented() -> dict[str, str]:
    """Each difference named in the table's first column, with its reason."""
    section = TABLE.read_text().split("## Where our requests differ from Codex's", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        if line.startswith("| `"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            for name in re.findall(r"`([^`]+)`", cells[0]):
                rows[name] = cells[-1]
    return rows


# ---- running a scenario through echsd ----------------------------------------------------


async def test_echsd_differs_from_codex_0169_only_as_documented(tmp_path: Path) -> None:
    """Every scenario through real daemons (the API with a key, and the ChatGPT backend with a
    login) against the mock; then each difference found must be a row, and each row be found."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "AGENTS.md").write_text("# Repo rules\nAlways answer in French.\n")
    (repo / "pixel.png").write_bytes(PNG)
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    (codex_home / "auth.json").write_text(json.dumps({"tokens": {"access_token": "tok", "refresh_token": "r", "account_id": "acct"}}))
    found: dict[str, set[str]] = {}
    async with open_mock_upstream() as mock, trio.open_nursery() as nursery:
        backend = mock.base_url.removesuffix("/v1") + "/backend-api/codex"
        daemons = {}
        for provider, url in (("openai", mock.base_url), ("codex", backend)):
            env = {"HOME": str(tmp_path / "home"), "CODEX_HOME": str(codex_home), "OPENAI_API_KEY": "sk-test"}
            settings = load_settings({"state_dir": str(tmp_path / provider), "provider": provider, "base_url": url}, env)
            daemons[provider] = await nursery.start(Daemon(settings).run)
        for scenario in SCENARIOS:
            codex = json.loads((CAPTURES / f"{scenario.name}.json").read_text())
            found[scenario.name] = differences(codex, await run(daemons[scenario.provider], mock, repo, scenario), compaction=scenario.compaction)
        for daemon in daemons.values():
            daemon.request_stop()
            await daemon.wait_stopped()
    if os.environ.get("ECHS_SHOW_DIFFERENCES"):  # for whoever updates the table
        for name, diffs in found.items():
            print(name, sorted(diffs))
    rows = documented()
    unexplained = {name: sorted(diffs - set(rows)) for name, diffs in found.items() if diffs - set(rows)}
    assert unexplained == {}, f"differences from Codex 0.169 that docs/endpoints.md does not list: {unexplained}"
    stale = sorted(set(rows) - set().union(*found.values()))
    assert stale == [], f"docs/endpoints.md lists differences no scenario shows: {stale}"
    assert all(rows.values()), "every row says why"
    assert not any("item:order" in diffs for diffs in found.values())


async def run(daemon: Any, mock: Any, repo: Path, scenario: Scenario) -> dict[str, Any]:
    create = {"cwd": str(repo), "model": scenario.model} | ({"reasoning": scenario.reasoning} if scenario.reasoning else {})
    tid = (await daemon.ops.create_thread(**create))["thread_id"]
    text = "run it" + ("\n" + mock_directive(scenario.steps) if scenario.steps else "")
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, text)
        end = await watch.wait_for(lambda e: e.type in ("turn.completed", "turn.error"), timeout=30)
    assert end.type == "turn.completed", (scenario.name, end.data)
    if scenario.compaction:
        await daemon.ops.compact(tid)
    mine = [r for r in mock.requests if r.headers.get("thread-id") == tid]
    if scenario.compaction:
        mine = [r for r in mine if r.path.endswith("/compact")]
    chosen = mine[scenario.request] if not scenario.compaction else mine[-1]
    return {"headers": chosen.headers, "body": chosen.body}
