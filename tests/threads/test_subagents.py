"""Sub-agents through the real tool loop: spawned in parallel, waited for (all, any, with a
timeout, interrupted, woken by a crash), steered, queued to, listed and killed, killed with
their parent, refused beyond a limit (children, depth), waiting for a slot beyond the
daemon-wide limit, configured by agent types, and only one's own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
import trio

from echsd.events import Event
from echsd.threads.core import ThreadCore
from tests.helpers import Watch, check_thread_invariants, mock_directive
from tests.threads.test_control import processes_with, unique_sleep
from tests.tools.exec_helpers import wait_until
from tests.wire.helpers import start_daemon, stop_daemon


def child_task(name: str, text: str, delay_ms: int = 20, words: int = 10) -> str:
    """A sub-agent's first message: it scripts the child's reply (slow enough to overlap)."""
    reply = " ".join([text] + [f"w{i}" for i in range(words)])
    return f"{name}\n" + mock_directive({"text": reply, "deltas": words + 1, "delay_ms": delay_ms})


def spawn(message: str, **options: Any) -> dict[str, Any]:
    return {"name": "spawn_agent", "arguments": {"message": message, **options}}


def wait(**arguments: Any) -> dict[str, Any]:
    return {"name": "wait_agents", "arguments": arguments}


def send_to(agent_id: str, message: str, **options: Any) -> dict[str, Any]:
    return {"name": "send_to_agent", "arguments": {"agent_id": agent_id, "message": message, **options}}


def outputs(watch: Watch, name: str) -> list[Any]:
    found = []
    for event in watch.of_type("tool.completed"):
        if event.data["name"] == name:
            text = event.data["output"]
            found.append(json.loads(text) if text.startswith("{") else text)
    return found


async def parent_turn(daemon: Any, workdir: Path, steps: list[dict[str, Any]], **create: Any) -> tuple[str, Watch]:
    tid = (await daemon.ops.create_thread(cwd=str(workdir), **create))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive(steps))
        await watch.wait_for(lambda e: e.type in ("turn.completed", "turn.error", "turn.interrupted"), timeout=30)
    return tid, watch


async def turn_span(daemon: Any, thread_id: str) -> tuple[float, float]:
    async with Watch(daemon, thread_id) as watch:
        done = await watch.wait_type("turn.completed")
    return watch.of_type("turn.started")[0].ts, done.ts


async def test_three_children_in_parallel_and_their_answers_reach_the_parent(daemon: Any, workdir: Path, mock_upstream: Any) -> None:
    spawns = [spawn(child_task(f"task {name}", f"answer-{name}")) for name in "abc"]
    tid, watch = await parent_turn(daemon, workdir, [{"calls": spawns}, {"calls": [wait()]}, {"text": "all three answered"}])
    agents = [result["agent_id"] for result in outputs(watch, "spawn_agent")]
    assert len(agents) == 3 and (await daemon.ops.get_thread(tid))["children"] == sorted(agents, key=(await daemon.ops.get_thread(tid))["children"].index)
    spans = [await turn_span(daemon, agent) for agent in agents]
    assert max(start for start, _ in spans) < min(end for _, end in spans), f"the children's turns did not overlap: {spans}"
    [waited] = outputs(watch, "wait_agents")
    assert waited["timed_out"] is False
    assert {a["agent_id"]: a["status"] for a in waited["agents"]} == dict.fromkeys(agents, "completed")
    answers = sorted(a["final_message"].split()[0] for a in waited["agents"])
    assert answers == ["answer-a", "answer-b", "answer-c"]
    sent = json.dumps(mock_upstream.requests[-1].body["input"])  # the parent's last model request
    assert all(f"answer-{name}" in sent for name in "abc")
    spawned = watch.of_type("subagent.spawned")
    assert sorted(e.data["agent_id"] for e in spawned) == sorted(agents)
    for agent in agents:
        shown = await daemon.ops.get_thread(agent)
        assert shown["parent"] == tid and shown["agent_type"] == "default" and shown["config"]["cwd"] == str(workdir)
    async with Watch(daemon, tid) as again:
        completed = await again.wait_count("subagent.completed", 3)
    assert sorted(e.data["agent_id"] for e in completed) == sorted(agents)
    await check_thread_invariants(daemon, tid)


async def test_wait_any_returns_on_the_first_completion(daemon: Any, workdir: Path) -> None:
    quick, slow = child_task("quick", "fast", delay_ms=1, words=2), child_task("slow", "late", delay_ms=300, words=20)
    _tid, watch = await parent_turn(daemon, workdir, [{"calls": [spawn(quick), spawn(slow)]}, {"calls": [wait(mode="any")]}, {"text": "ok"}])
    [waited] = outputs(watch, "wait_agents")
    statuses = sorted(a["status"] for a in waited["agents"])
    assert statuses == ["completed", "running"] and not waited["timed_out"]


async def test_wait_honours_its_timeout(daemon: Any, workdir: Path) -> None:
    slow = child_task("slow", "late", delay_ms=300, words=20)
    _tid, watch = await parent_turn(daemon, workdir, [{"calls": [spawn(slow)]}, {"calls": [wait(timeout_ms=300)]}, {"text": "ok"}])
    [waited] = outputs(watch, "wait_agents")
    assert waited["timed_out"] is True and waited["agents"][0]["status"] == "running"
    completed = [e for e in watch.of_type("tool.completed") if e.data["name"] == "wait_agents"][0]
    assert 250 <= completed.data["duration_ms"] < 2000


async def test_interrupting_a_waiting_parent_stops_the_wait_and_spares_the_children(daemon: Any, workdir: Path) -> None:
    slow = child_task("slow", "late", delay_ms=100, words=30)
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive([{"calls": [spawn(slow)]}, {"calls": [wait(timeout_ms=600_000)]}, {"text": "x"}]))
        await watch.wait_for(lambda e: e.type == "tool.started" and e.data["name"] == "wait_agents")
        started = trio.current_time()
        assert (await daemon.ops.interrupt(tid))["interrupted"] is True
        assert trio.current_time() - started < 1.0
    child = (await daemon.ops.get_thread(tid))["children"][0]
    assert (await daemon.ops.get_thread(child))["state"] == "running"  # an interrupt does not kill children
    async with Watch(daemon, child) as child_watch:
        await child_watch.wait_type("turn.completed", timeout=30)


async def test_killing_the_parent_kills_every_descendant(daemon: Any, workdir: Path) -> None:
    sleep = unique_sleep()
    grandchild_script = mock_directive([{"calls": [{"name": "exec_command", "arguments": {"cmd": sleep, "yield_time_ms": 30000}}]}, {"text": "x"}])
    child_script = "delegate\n" + mock_directive([{"calls": [spawn("sleep a while\n" + grandchild_script)]}, {"calls": [wait()]}, {"text": "x"}])
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive([{"calls": [spawn(child_script)]}, {"calls": [wait()]}, {"text": "x"}]))
        await watch.wait_for(lambda e: e.type == "tool.started" and e.data["name"] == "wait_agents")
        await wait_until(lambda: processes_with(sleep.split()[1]))  # the grandchild's command runs
        killed = await daemon.ops.kill(tid)
    child = (await daemon.ops.get_thread(tid))["children"][0]
    grandchild = (await daemon.ops.get_thread(child))["children"][0]
    assert sorted(killed["killed"]) == sorted([tid, child, grandchild])
    for thread_id in killed["killed"]:
        shown = await daemon.ops.get_thread(thread_id)
        assert shown["state"] == "killed" and shown["active_turn"] is None
    await wait_until(lambda: not processes_with(sleep.split()[1]))


async def test_spawning_beyond_the_limit_is_a_clear_tool_error(limited: Any, workdir: Path) -> None:
    spawns = [spawn(child_task(f"t{i}", f"a{i}", delay_ms=1, words=1)) for i in range(3)]
    _tid, watch = await parent_turn(limited, workdir, [{"calls": spawns}, {"text": "ok"}])
    results = outputs(watch, "spawn_agent")
    errors = [r for r in results if isinstance(r, str)]
    assert len(errors) == 1 and "cannot spawn an agent" in errors[0] and "max_children=2" in errors[0]


async def test_only_ones_own_agents(daemon: Any, workdir: Path) -> None:
    stranger = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    steps = [{"calls": [{"name": "kill_agent", "arguments": {"agent_id": stranger}}, {"name": "send_to_agent", "arguments": {"agent_id": stranger, "message": "hi"}}]}, {"text": "ok"}]
    _tid, watch = await parent_turn(daemon, workdir, steps)
    for output in [e.data["output"] for e in watch.of_type("tool.completed")]:
        assert "is not one of your agents" in output
    assert (await daemon.ops.get_thread(stranger))["state"] == "idle"


async def test_a_sub_agent_gets_no_more_than_its_parent(daemon: Any, workdir: Path) -> None:
    steps = [{"calls": [spawn("x", tools=["exec_command"]), spawn(child_task("t", "a", 1, 1), agent_type="explorer")]}, {"text": "ok"}]
    tid, watch = await parent_turn(daemon, workdir, steps, tools=["read_file", "list_dir", "spawn_agent", "wait_agents"], writes="dry-run")
    [refused] = [r for r in outputs(watch, "spawn_agent") if isinstance(r, str)]
    [spawned] = [r for r in outputs(watch, "spawn_agent") if isinstance(r, dict)]
    assert "cannot have tools its parent lacks: exec_command" in refused
    child = (await daemon.ops.get_thread(spawned["agent_id"]))["config"]
    assert child["writes"] == "dry-run" and set(child["tools"]) <= {"read_file", "list_dir", "spawn_agent", "wait_agents"}


async def test_beyond_max_depth_spawn_agent_is_a_clear_tool_error(limited: Any, workdir: Path) -> None:
    child_script = "delegate\n" + mock_directive([{"calls": [spawn(child_task("deeper", "x", 1, 1))]}, {"text": "could not"}])
    tid, _watch = await parent_turn(limited, workdir, [{"calls": [spawn(child_script)]}, {"calls": [wait()]}, {"text": "ok"}])
    [child] = (await limited.ops.get_thread(tid))["children"]
    async with Watch(limited, child) as child_watch:
        await child_watch.wait_type("turn.completed")
    [refused] = outputs(child_watch, "spawn_agent")
    assert refused.startswith("error: cannot spawn an agent: a child of") and "the limit is max_depth=1" in refused
    assert (await limited.ops.get_thread(child))["children"] == []


async def test_sub_agent_turns_beyond_the_daemon_wide_limit_wait_visibly(limited: Any, workdir: Path) -> None:
    spawns = [spawn(child_task(f"t{i}", f"a{i}", delay_ms=20, words=10)) for i in range(2)]
    tid, watch = await parent_turn(limited, workdir, [{"calls": spawns}, {"calls": [wait()]}, {"text": "ok"}])
    [waited] = outputs(watch, "wait_agents")
    assert [a["status"] for a in waited["agents"]] == ["completed", "completed"]
    spans: dict[str, tuple[float, float]] = {}
    waits: dict[str, list[Event]] = {}
    for child in (await limited.ops.get_thread(tid))["children"]:
        async with Watch(limited, child) as child_watch:
            await child_watch.wait_type("turn.completed")
        deltas = child_watch.of_type("turn.delta")
        spans[child] = (deltas[0].ts, deltas[-1].ts)
        waits[child] = child_watch.of_type("turn.waiting")
    [(second, [waiting])] = [(child, found) for child, found in waits.items() if found]  # exactly one waited
    assert "max_running_subagents" in waiting.data["reason"]
    [first] = [child for child in spans if child != second]
    assert spans[first][1] <= spans[second][0], f"the turns overlapped with max_running_subagents=1: {spans}"


async def test_steer_queue_kill_and_list_ones_own_agents(daemon: Any, workdir: Path) -> None:
    slow, endless = child_task("slow", "first", delay_ms=20, words=100), child_task("endless", "never", delay_ms=50, words=2000)
    tid, _watch = await parent_turn(daemon, workdir, [{"calls": [spawn(slow)]}, {"calls": [spawn(endless)]}, {"text": "spawned"}])
    first, second = (await daemon.ops.get_thread(tid))["children"]
    async with Watch(daemon, first) as child_watch:
        await child_watch.wait_type("turn.delta")  # its first turn is streaming
        steer = send_to(first, "also this\n" + mock_directive({"text": "steered"}), mode="steer")
        queue = send_to(first, "next\n" + mock_directive({"text": "queued"}))
        kill = {"name": "kill_agent", "arguments": {"agent_id": second}}
        listing = {"name": "list_agents", "arguments": {}}
        steps = [{"calls": [steer]}, {"calls": [queue, kill]}, {"calls": [wait(agent_ids=[first])]}, {"calls": [listing]}, {"text": "ok"}]
        async with Watch(daemon, tid) as watch:
            since = watch.last_seq
            await daemon.ops.send(tid, mock_directive(steps))
            await watch.wait_type("turn.completed", after_seq=since)
        await child_watch.wait_count("turn.completed", 2)
    sent = outputs(watch, "send_to_agent")
    assert [s["disposition"] for s in sent] == ["steered", "queued"]
    assert outputs(watch, "kill_agent") == [{"agent_id": second, "killed": [second]}]
    [waited] = outputs(watch, "wait_agents")
    done = {"agent_id": first, "agent_type": "default", "state": "idle", "status": "completed", "final_message": "queued", "branch": None, "diff_stat": None}
    assert waited["agents"] == [done]
    [listed] = outputs(watch, "list_agents")
    killed = {"agent_id": second, "agent_type": "default", "state": "killed", "status": "killed", "final_message": "", "branch": None, "diff_stat": None}
    assert listed["agents"] == [done, killed]
    # The steer joined the running turn (its reply ends that turn); the queued message ran next.
    assert [e.data["final_text"] for e in child_watch.of_type("turn.completed")] == ["steered", "queued"]
    delivered = child_watch.of_type("input.delivered")
    assert [d.data["mode"] for d in delivered] == ["send", "steer", "queue"]
    assert delivered[0].data["turn_id"] == delivered[1].data["turn_id"]
    assert (await daemon.ops.get_thread(second))["active_turn"] is None
    for thread_id in (tid, first, second):
        await check_thread_invariants(daemon, thread_id)


@pytest.fixture
async def limited(tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery) -> AsyncIterator[Any]:
    tuning = {"max_children": 2, "max_depth": 1, "max_running_subagents": 1}
    daemon = await start_daemon(nursery, tmp_path / "state", mock_upstream.base_url, tcp=False, tuning=tuning)
    yield daemon
    await stop_daemon(daemon)


async def test_a_child_whose_worker_crashes_wakes_its_waiting_parent(daemon: Any, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_finish = ThreadCore.finish_turn
    crashes = {"left": 1}

    def crash_a_child(core: ThreadCore, status: str, error: Any = None, partial: str = "", **more: Any) -> Any:
        if core.parent is not None and crashes["left"]:
            crashes["left"] -= 1
            raise RuntimeError("injected worker crash")
        return real_finish(core, status, error, partial, **more)

    monkeypatch.setattr(ThreadCore, "finish_turn", crash_a_child)
    tid, watch = await parent_turn(daemon, workdir, [{"calls": [spawn(child_task("t", "a", 1, 1))]}, {"calls": [wait()]}, {"text": "ok"}])
    assert watch.of_type("turn.completed"), "the parent did not finish its turn"
    [waited] = outputs(watch, "wait_agents")
    [agent] = waited["agents"]
    assert (agent["status"], waited["timed_out"]) == ("error", False)
    async with Watch(daemon, tid) as again:
        [completed] = await again.wait_count("subagent.completed", 1)
    assert completed.data["status"] == "error" and completed.data["agent_id"] == agent["agent_id"]


AGENT_TYPES = """
[agent_types.explorer]
reasoning = "medium"
tools = ["read_file", "list_dir"]

[agent_types.reviewer]
description = "reads a change and lists its problems"
model = "gpt-5.4"
reasoning = "high"
instructions = "Review the change you are given."
tools = ["read_file", "grep_files", "exec_command"]
"""


async def test_agent_types_from_config_toml_and_explicit_params_win(
    tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery, workdir: Path
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text(AGENT_TYPES)
    daemon = await start_daemon(nursery, state, mock_upstream.base_url, tcp=False)
    quick = child_task("t", "a", 1, 1)
    steps = [
        {
            "calls": [
                spawn(quick, agent_type="reviewer"),
                spawn(quick, agent_type="explorer"),
                spawn(quick, agent_type="reviewer", model="gpt-5.5", reasoning="low", instructions="Just look.", tools=["list_dir"]),
                spawn(quick, agent_type="nosuch"),
                spawn(quick, model="gpt-5.4-mini", reasoning="minimal"),
                spawn(quick, model="gpt-5.4-mini"),  # the parent's effort (none) does not fit it
            ]
        },
        {"text": "ok"},
    ]
    parent_tools = ["read_file", "list_dir", "grep_files", "spawn_agent", "wait_agents"]
    tid, watch = await parent_turn(daemon, workdir, steps, tools=parent_tools, model="gpt-5.5", reasoning="none")
    [offered] = [t for t in mock_upstream.requests[0].body["tools"] if t["name"] == "spawn_agent"]
    assert "- reviewer: reads a change and lists its problems" in offered["description"]
    assert offered["parameters"]["properties"]["agent_type"]["enum"] == ["default", "explorer", "worker", "research", "simple", "reviewer"]

    results = outputs(watch, "spawn_agent")  # the calls ran in parallel: match children by type and config
    errors = sorted(r for r in results if isinstance(r, str))
    assert errors == [  # an explicit effort is checked strictly against the model
        "error: cannot spawn an agent: model gpt-5.4-mini accepts reasoning low, medium, high, xhigh (got 'minimal')",
        "error: unknown agent_type 'nosuch'; known: default, explorer, research, reviewer, simple, worker",
    ]
    children = [await daemon.ops.get_thread(r["agent_id"]) for r in results if isinstance(r, dict)]
    configs = {(c["agent_type"], c["config"]["model"]): c["config"] for c in children}
    assert set(configs) == {("reviewer", "gpt-5.4"), ("explorer", "gpt-5.5"), ("reviewer", "gpt-5.5"), ("default", "gpt-5.4-mini")}
    assert configs["default", "gpt-5.4-mini"]["reasoning"] == "medium"  # that model's default effort
    reviewer = configs["reviewer", "gpt-5.4"]
    assert reviewer["reasoning"] == "high" and reviewer["instructions"] == "Review the change you are given."
    assert reviewer["tools"] == ["read_file", "grep_files"]  # never a tool the parent lacks
    explorer = configs["explorer", "gpt-5.5"]
    assert explorer["reasoning"] == "medium" and explorer["tools"] == ["read_file", "list_dir"]
    assert explorer["instructions"] == ""  # the base prompt, which a sub-agent's requests extend:
    child_request = next(r.body for r in mock_upstream.requests if r.headers.get("thread-id") in [c["thread_id"] for c in children if c["config"] is explorer])
    assert "# You are a sub-agent" in child_request["instructions"] and "apply_patch" in child_request["instructions"]
    explicit = configs["reviewer", "gpt-5.5"]
    assert (explicit["reasoning"], explicit["instructions"], explicit["tools"]) == ("low", "Just look.", ["list_dir"])
    assert all(child["parent"] == tid for child in children)
    await stop_daemon(daemon)
