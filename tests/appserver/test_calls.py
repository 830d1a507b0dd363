"""Exec sessions and sub-agents through the translator (sans-IO): a command left running
is no finished item, and a sub-agent's spawn, messages, waits and end are collab items."""

from __future__ import annotations

import json
from typing import Any

from echsd.appserver.ids import thread_uuid
from echsd.appserver.outs import Notify, Out
from tests.appserver.eventlog import UUID, Log, checked, created, methods, run

CHILD = "thr_00000000000000bb"
OTHER = "thr_00000000000000cc"


def running(session_id: int, output: str) -> dict[str, Any]:
    """A tool.completed of exec_command or write_stdin whose command still runs."""
    text = f"Chunk ID: ab12\nWall time: 0.2500 seconds\nProcess running with session ID {session_id}\nOriginal token count: 1\nOutput:\n{output}"
    return {"ok": True, "output": text, "exit_code": None, "signal": None, "session_id": session_id}


def exited(code: int | None, output: str) -> dict[str, Any]:
    status = f"Process exited with code {code}" if code is not None else "Process killed by signal 9 (SIGKILL)"
    text = f"Chunk ID: cd34\nWall time: 0.1000 seconds\n{status}\nOriginal token count: 1\nOutput:\n{output}"
    return {"ok": code == 0, "output": text, "exit_code": code, "signal": None if code is not None else 9, "session_id": None}


def notes(outs: list[Out], method: str) -> list[dict[str, Any]]:
    return [out.params for out in outs if isinstance(out, Notify) and out.method == method]


def of_item(outs: list[Out], item_id: str) -> list[tuple[str, dict[str, Any]]]:
    return [(o.method, o.params) for o in outs if isinstance(o, Notify) and (o.params.get("item") or {}).get("id") == item_id]


def session_log() -> Log:
    """turn_1 starts `python3 -i` and leaves it running as session 4242."""
    log = Log()
    created(log)
    log.turn()
    log.add("tool.started", turn_id="turn_1", call_id="c1", name="exec_command", arguments={"cmd": "python3 -i", "tty": True})
    log.add("tool.output", turn_id="turn_1", call_id="c1", stream="stdout", chunk=">>> ")
    log.add("tool.completed", turn_id="turn_1", call_id="c1", name="exec_command", duration_ms=250.0, **running(4242, ">>> "))
    log.add("turn.completed", turn_id="turn_1")
    return log


def test_a_command_left_running_is_no_finished_item() -> None:
    _, outs = run(session_log().events)
    lifecycle = of_item(outs, "c1")
    assert [method for method, _ in lifecycle] == ["item/started", "item/started"]  # never completed
    first, again = (params["item"] for _, params in lifecycle)
    assert (first["status"], first["processId"], first["source"]) == ("inProgress", None, "agent")
    assert (again["status"], again["processId"], again["source"]) == ("inProgress", "4242", "unifiedExecStartup")
    assert again["exitCode"] is None and again["aggregatedOutput"] == ">>> "
    assert notes(outs, "turn/completed")[0]["turn"]["status"] == "completed"


def test_typing_into_a_session_until_it_exits() -> None:
    log = session_log()
    translator, _ = run(log.events, keep_turns=True)
    log.turn("turn_2", "ask it", "in_2")
    more: list[Out] = [out for event in log.events[-4:] for out in translator.feed(event)]
    for chars, result in (("print(6*7)\n", running(4242, "42\n>>> ")), ("", running(4242, "")), ("exit()\n", exited(0, ""))):
        call_id = f"w{len(chars)}"
        more += translator.feed(log.add("tool.started", turn_id="turn_2", call_id=call_id, name="write_stdin", arguments={"session_id": 4242, "chars": chars}))
        if chars.startswith("print"):
            more += translator.feed(log.add("tool.output", turn_id="turn_2", call_id=call_id, stream="stdout", chunk="42\n"))
        more += translator.feed(log.add("tool.completed", turn_id="turn_2", call_id=call_id, name="write_stdin", duration_ms=5.0, **result))
    assert of_item(more, "c1") == []  # the exit code alone ends nothing: the daemon says when a session ends
    more += translator.feed(log.add("exec.session_ended", session_id=4242, reason="its process exited", exit_code=0))
    more += translator.feed(log.add("turn.completed", turn_id="turn_2"))
    interactions = notes(checked(more), "item/commandExecution/terminalInteraction")
    assert [(i["itemId"], i["processId"], i["stdin"], i["turnId"]) for i in interactions] == [
        ("c1", "4242", "print(6*7)\n", "turn_2"),
        ("c1", "4242", "", "turn_2"),
        ("c1", "4242", "exit()\n", "turn_2"),
    ]
    assert [(d["itemId"], d["delta"]) for d in notes(more, "item/commandExecution/outputDelta")] == [("c1", "42\n")]
    [(method, done)] = of_item(more, "c1")
    assert method == "item/completed" and done["turnId"] == "turn_1"  # the turn that started it
    item = done["item"]
    assert (item["status"], item["exitCode"], item["processId"], item["aggregatedOutput"]) == ("completed", 0, "4242", ">>> 42\n>>> ")
    turn_1, turn_2 = translator.turns
    assert [entry.item for entry in turn_1.entries if entry.item["id"] == "c1"] == [item]  # history shows the end
    assert all(entry.item["type"] != "commandExecution" for entry in turn_2.entries)


def test_sessions_end_when_the_daemon_says_so() -> None:
    """An interrupted turn's sessions, a paused thread's: ended by the daemon's events, in its order."""
    log = session_log()
    log.turn("turn_2", "again", "in_2")
    log.add("tool.started", turn_id="turn_2", call_id="c2", name="exec_command", arguments={"cmd": "sleep 100"})
    log.add("tool.completed", turn_id="turn_2", call_id="c2", name="exec_command", duration_ms=250.0, **running(77, ""))
    log.add("turn.interrupted", turn_id="turn_2", reason="interrupt")
    log.add("thread.state", state="idle")
    _, before = run(log.events)
    assert not any(p["item"].get("status") == "failed" for p in notes(before, "item/completed"))  # nothing guessed
    log.add("exec.session_ended", session_id=77, reason="the turn that started it was interrupted", exit_code=None)
    _, outs = run(log.events)
    ended = [(p["item"]["id"], p["turnId"], p["item"]["status"]) for p in notes(outs, "item/completed") if "status" in p["item"]]
    assert ended[-1] == ("c2", "turn_2", "failed")  # killed with its turn; c1 lives on
    assert not any(item_id == "c1" for item_id, _, _ in ended)
    assert methods(outs)[-3:] == ["turn/completed", "thread/status/changed", "item/completed"]
    log.add("thread.state", state="paused")
    log.add("exec.session_ended", session_id=4242, reason="the thread was paused", exit_code=None)
    _, outs = run(log.events)
    assert ("c1", "turn_1", "failed") in [(p["item"]["id"], p["turnId"], p["item"].get("status")) for p in notes(outs, "item/completed")]


def test_a_session_a_restart_ended_is_over() -> None:
    log = session_log()
    translator, outs = run(log.events)
    assert not any(method == "item/completed" for method, _ in of_item(outs, "c1"))
    later = translator.feed(log.add("exec.session_ended", session_id=4242, reason="the daemon restarted", exit_code=None))
    [(method, params)] = of_item(later, "c1")
    assert method == "item/completed" and params["item"]["status"] == "failed" and params["turnId"] == "turn_1"


def test_typing_into_a_session_gone_or_unknown() -> None:
    log = session_log()
    log.add("exec.session_ended", session_id=4242, reason="closed to make room", exit_code=None)
    log.turn("turn_2", "again", "in_2")
    log.add("tool.started", turn_id="turn_2", call_id="w1", name="write_stdin", arguments={"session_id": 4242, "chars": "x"})
    log.add("tool.completed", turn_id="turn_2", call_id="w1", name="write_stdin", ok=False, output="error: session 4242 is gone: closed to make room")
    log.add("tool.started", turn_id="turn_2", call_id="w2", name="write_stdin", arguments={"session_id": 9, "chars": "ls\n"})
    log.add("tool.completed", turn_id="turn_2", call_id="w2", name="write_stdin", ok=False, output="error: unknown session_id 9")
    _, outs = run(log.events)
    assert [(p["itemId"], p["processId"]) for p in notes(outs, "item/commandExecution/terminalInteraction")] == [("w1", "4242"), ("w2", "9")]
    assert [p["item"]["status"] for p in notes(outs, "item/completed") if p["item"]["id"] == "c1"] == ["failed"]  # gone
    assert not any(p["item"]["id"] in ("w1", "w2") for p in notes(outs, "item/started"))


def agent_log() -> Log:
    log = Log()
    created(log)
    log.turn()
    log.add("tool.started", turn_id="turn_1", call_id="a1", name="spawn_agent", arguments={"message": "look around", "agent_type": "explorer"})
    log.add("subagent.spawned", agent_id=CHILD, agent_type="explorer", config={"model": "gpt-5.4-mini", "reasoning": "low"})
    log.add("tool.completed", turn_id="turn_1", call_id="a1", name="spawn_agent", ok=True, output=json.dumps({"agent_id": CHILD}))
    return log


def test_a_spawned_agent_is_a_collab_call() -> None:
    _, outs = run(agent_log().events)
    started, completed = (params["item"] for _, params in of_item(outs, "a1"))
    assert started == {
        "type": "collabAgentToolCall", "id": "a1", "tool": "spawnAgent", "status": "inProgress", "senderThreadId": UUID,
        "receiverThreadIds": [], "prompt": "look around", "model": None, "reasoningEffort": None, "agentsStates": {},
    }  # fmt: skip
    assert completed == started | {
        "status": "completed",
        "receiverThreadIds": [thread_uuid(CHILD)],
        "model": "gpt-5.4-mini",
        "reasoningEffort": "low",
        "agentsStates": {thread_uuid(CHILD): {"status": "running", "message": None}},
    }


def test_messages_waits_kills_and_lists() -> None:
    log = agent_log()
    calls = [
        ("send_to_agent", {"agent_id": CHILD, "message": "more", "mode": "queue"}, {"agent_id": CHILD, "disposition": "queued"}),
        ("wait_agents", {"agent_ids": [CHILD, OTHER]}, {"agents": [
            {"agent_id": CHILD, "status": "completed", "final_message": "found it"},
            {"agent_id": OTHER, "status": "error", "final_message": ""},
        ], "timed_out": False}),
        ("kill_agent", {"agent_id": CHILD}, {"agent_id": CHILD, "killed": [CHILD]}),
        ("list_agents", {}, {"agents": [{"agent_id": CHILD, "status": "killed", "final_message": "found it"}]}),
    ]  # fmt: skip
    for number, (name, arguments, answer) in enumerate(calls):
        log.add("tool.started", turn_id="turn_1", call_id=f"b{number}", name=name, arguments=arguments)
        log.add("tool.completed", turn_id="turn_1", call_id=f"b{number}", name=name, ok=True, output=json.dumps(answer))
    log.add("tool.started", turn_id="turn_1", call_id="b9", name="kill_agent", arguments={"agent_id": OTHER})
    log.add("tool.completed", turn_id="turn_1", call_id="b9", name="kill_agent", ok=False, output=f"error: {OTHER!r} is not one of your agents")
    _, outs = run(log.events)
    done = {p["item"]["id"]: p["item"] for p in notes(outs, "item/completed") if p["item"]["type"] == "collabAgentToolCall"}
    child, other = thread_uuid(CHILD), thread_uuid(OTHER)
    assert (done["b0"]["tool"], done["b0"]["prompt"], done["b0"]["agentsStates"]) == ("sendInput", "more", {child: {"status": "running", "message": None}})
    assert done["b1"]["tool"] == "wait" and done["b1"]["status"] == "failed" and done["b1"]["receiverThreadIds"] == [child, other]
    assert done["b1"]["agentsStates"] == {child: {"status": "completed", "message": "found it"}, other: {"status": "errored", "message": None}}
    assert (done["b2"]["tool"], done["b2"]["agentsStates"]) == ("closeAgent", {child: {"status": "shutdown", "message": None}})
    assert (done["b3"]["tool"], done["b3"]["status"], done["b3"]["receiverThreadIds"]) == ("listAgents", "completed", [child])
    assert (done["b9"]["status"], done["b9"]["receiverThreadIds"]) == ("failed", [other])


def test_a_child_that_finishes_shows_in_the_parents_turn_or_its_last() -> None:
    log = agent_log()
    log.add("subagent.completed", agent_id=CHILD, turn_id="turn_c", status="completed", final_message="done")
    log.add("turn.completed", turn_id="turn_1")
    log.add("subagent.completed", agent_id=CHILD, turn_id="turn_d", status="interrupted", final_message="")
    translator, outs = run(log.events, keep_turns=True)
    activities = [(o.method, o.params["turnId"], o.params["item"]["kind"]) for o in outs if isinstance(o, Notify) and o.params.get("item", {}).get("type") == "subAgentActivity"]
    assert activities == [("item/started", "turn_1", "completed"), ("item/completed", "turn_1", "completed")] + [
        ("item/started", "turn_1", "interrupted"), ("item/completed", "turn_1", "interrupted")]  # fmt: skip
    item = notes(outs, "item/completed")[-1]["item"]
    assert item | {"id": "x"} == {"type": "subAgentActivity", "id": "x", "kind": "interrupted", "agentThreadId": thread_uuid(CHILD), "agentPath": CHILD, "model": "gpt-5.4-mini", "reasoningEffort": "low"}
    assert [entry.item["type"] for entry in translator.turns[0].entries][-2:] == ["subAgentActivity", "subAgentActivity"]
