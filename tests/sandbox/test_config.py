"""The sandbox keys of a thread's config: defaults from config.toml, hot-swapped with
``echs config``, inherited by children (never looser unless asked for explicitly), and
narrowed for sub-agents the model spawns (the read-only agent types)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from echsd.errors import BadRequest
from echsd.settings import SettingsError, load_settings
from tests.cli.helpers import Serve, clean_env, echs, new_thread
from tests.helpers import Watch, mock_directive
from tests.threads.test_subagents import child_task, outputs, parent_turn, spawn


def test_config_toml_sets_the_defaults_new_threads_get(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (tmp_path / "home").mkdir()
    roots = [str(tmp_path / "shared")]
    (state / "config.toml").write_text(f'sandbox = "read-only"\nnetwork = "on"\nwritable_roots = {json.dumps(roots)}\n')
    daemon = Serve(state, env=clean_env(tmp_path / "home"))
    try:
        tid = new_thread(state, "--cwd", str(tmp_path))
        config = json.loads(echs(state, "show", tid, "--json").stdout)["config"]
        assert (config["sandbox"], config["network"], config["writable_roots"]) == ("read-only", "on", roots)
        other = new_thread(state, "--cwd", str(tmp_path), "--sandbox", "full-access", "--network", "off", "--writable-root", str(tmp_path))
        config = json.loads(echs(state, "show", other, "--json").stdout)["config"]
        assert (config["sandbox"], config["network"], config["writable_roots"]) == ("full-access", "off", [str(tmp_path)])
        changed = echs(state, "config", tid, "sandbox=workspace-write", "network=off", f"writable_roots={tmp_path}/a,{tmp_path}/b")
        assert changed.returncode == 0, changed.stderr
        config = json.loads(echs(state, "show", tid, "--json").stdout)["config"]
        assert (config["sandbox"], config["network"], config["writable_roots"]) == ("workspace-write", "off", [f"{tmp_path}/a", f"{tmp_path}/b"])
        shown = echs(state, "show", tid).stdout
        assert "workspace-write, network off, also writable:" in shown
        bad = echs(state, "config", tid, "sandbox=everything")
        assert bad.returncode == 2 and "sandbox must be one of" in bad.stderr
    finally:
        daemon.kill()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('sandbox = "open"', "'sandbox'"),
        ('network = "maybe"', "'network'"),
        ('writable_roots = ["relative/path"]', "'writable_roots'"),
        ('sandbox_fallback = "yes"', "'sandbox_fallback'"),
        ('sandbox_disable = ["apparmor"]', "'sandbox_disable'"),
        ('[agent_types.x]\nsandbox = "open"', "agent_types.x.sandbox"),
        ('[approval]\non_timeout = "later"', "approval.on_timeout"),
        ('[approval]\nallow = [["git", 1]]', "approval.allow"),
    ],
)
def test_bad_sandbox_settings_are_refused_at_start(tmp_path: Path, text: str, problem: str) -> None:
    (tmp_path / "config.toml").write_text(text + "\n")
    with pytest.raises(SettingsError, match=problem):
        load_settings({"state_dir": str(tmp_path), "provider": "mock"}, {"HOME": str(tmp_path)})


async def test_a_child_inherits_its_parents_sandbox_unless_told_otherwise(daemon: Any, workdir: Path) -> None:
    parent = await daemon.ops.create_thread(cwd=str(workdir), sandbox="read-only", network="off", writable_roots=[str(workdir)])
    child = await daemon.ops.create_thread(cwd=str(workdir), parent=parent["thread_id"])
    assert {key: child["config"][key] for key in ("sandbox", "network", "writable_roots")} == {
        "sandbox": "read-only",
        "network": "off",
        "writable_roots": [str(workdir)],
    }
    for looser in ({"sandbox": "full-access"}, {"network": "on"}, {"writable_roots": [str(workdir), "/elsewhere"]}):
        with pytest.raises(BadRequest, match="looser than the parent|not among the parent's"):
            await daemon.ops.create_thread(cwd=str(workdir), parent=parent["thread_id"], **looser)
    explicit = await daemon.ops.create_thread(cwd=str(workdir), parent=parent["thread_id"], sandbox="full-access", network="on", loosen_policy=True)
    assert (explicit["config"]["sandbox"], explicit["config"]["network"]) == ("full-access", "on")


async def test_spawned_sub_agents_are_never_looser_and_explorers_read_only(daemon: Any, workdir: Path) -> None:
    steps = [{"calls": [spawn(child_task("a", "x", 1, 1)), spawn(child_task("b", "y", 1, 1), agent_type="explorer")]}, {"text": "ok"}]
    _tid, watch = await parent_turn(daemon, workdir, steps, sandbox="workspace-write", network="off", writable_roots=[str(workdir)])
    children = [(await daemon.ops.get_thread(result["agent_id"]))["config"] for result in outputs(watch, "spawn_agent")]
    explorer, worker = sorted(children, key=lambda config: config["sandbox"])  # the calls ran in parallel
    assert (worker["sandbox"], worker["network"], worker["writable_roots"]) == ("workspace-write", "off", [str(workdir)])
    assert (explorer["sandbox"], explorer["network"]) == ("read-only", "off")
    steps = [{"calls": [spawn(child_task("c", "z", 1, 1), agent_type="explorer")]}, {"text": "ok"}]
    _tid, watch = await parent_turn(daemon, workdir, steps, sandbox="full-access")
    (result,) = outputs(watch, "spawn_agent")
    assert (await daemon.ops.get_thread(result["agent_id"]))["config"]["sandbox"] == "read-only"


async def test_a_thread_config_refuses_bad_sandbox_values(daemon: Any, workdir: Path) -> None:
    for bad in ({"sandbox": "open"}, {"network": "maybe"}, {"writable_roots": ["relative"]}):
        with pytest.raises(BadRequest):
            await daemon.ops.create_thread(cwd=str(workdir), **bad)


async def test_a_child_keeps_its_parents_refusals_and_gets_no_allowance_it_lacks(daemon: Any, workdir: Path) -> None:
    """The parent refuses ``touch``: so does a child the model spawns (its command does not
    run, the file is not made), and a child made with ``thread.create {parent}`` adds its own
    refusals to the parent's; an allow rule the parent lacks is refused unless asked
    explicitly, and "approve for this thread" rules are not inherited."""
    target = workdir / "by-child"
    task = "toucher\n" + mock_directive([{"calls": [{"name": "exec_command", "arguments": {"cmd": f"touch {target}"}}]}, {"text": "tried"}])
    steps = [{"calls": [spawn(task)]}, {"calls": [{"name": "wait_agents", "arguments": {"timeout_ms": 20000}}]}, {"text": "ok"}]
    parent, watch = await parent_turn(daemon, workdir, steps, approval_deny=[["touch"]], approval_allow=[["git", "status"]])
    (spawned,) = outputs(watch, "spawn_agent")
    child = await daemon.ops.get_thread(spawned["agent_id"])
    assert child["config"]["approval_deny"] == [["touch"]] and child["config"]["approval_allow"] == []
    async with Watch(daemon, spawned["agent_id"]) as child_watch:
        await child_watch.wait_for(lambda e: e.type == "turn.completed", timeout=30)
    (refused,) = [e.data["output"] for e in child_watch.of_type("tool.completed")]
    assert "touch" in refused and "did not run" in refused and not target.exists()
    made = await daemon.ops.create_thread(cwd=str(workdir), parent=parent, approval_deny=[["rm"]], approval_allow=[["git", "status"]])
    assert made["config"]["approval_deny"] == [["touch"], ["rm"]] and made["config"]["approval_allow"] == [["git", "status"]]
    with pytest.raises(BadRequest, match="approval_allow make are not among the parent's"):
        await daemon.ops.create_thread(cwd=str(workdir), parent=parent, approval_allow=["make"])
    loosened = await daemon.ops.create_thread(cwd=str(workdir), parent=parent, approval_deny=[], approval_allow=["make"], loosen_policy=True)
    assert loosened["config"]["approval_deny"] == [] and loosened["config"]["approval_allow"] == [["make"]]
