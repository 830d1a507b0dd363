"""The event translator (sans-IO): echsd event sequences in, protocol messages out."""

from __future__ import annotations

from echsd.appserver import described, items
from echsd.appserver.translate import ApprovalEnded, AskApproval, Notify
from tests.appserver.eventlog import THREAD, UUID, Log, created, methods, run

def test_a_turn_with_text_and_a_command() -> None:
    log = Log()
    created(log)
    log.turn()
    log.add("turn.delta", turn_id="turn_1", item_id="msg_a", delta="Run")
    log.add("turn.delta", turn_id="turn_1", item_id="msg_a", delta="ning.")
    log.add("item.completed", turn_id="turn_1", item={"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Running."}]})
    log.add("item.completed", turn_id="turn_1", item={"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"})
    log.add("tool.started", turn_id="turn_1", call_id="c1", name="exec_command", arguments={"cmd": "ls", "workdir": "sub"})
    log.add("tool.output", turn_id="turn_1", call_id="c1", stream="stdout", chunk="a\n")
    log.add("tool.completed", turn_id="turn_1", call_id="c1", name="exec_command", ok=True, output="Exit code: 0\nWall time: 0.01 s\nOutput:\na\n", duration_ms=12.5, exit_code=0)
    log.add("turn.usage", turn_id="turn_1", input_tokens=10, cached_tokens=2, output_tokens=3, reasoning_tokens=1)
    log.add("turn.completed", turn_id="turn_1", final_text="Running.")
    log.add("thread.state", state="idle")
    translator, outs = run(log.events, context_window=lambda model: 1000)
    assert methods(outs) == [
        "thread/status/changed", "turn/started", "item/started", "item/completed",
        "item/started", "item/agentMessage/delta", "item/agentMessage/delta", "item/completed",
        "item/started", "item/commandExecution/outputDelta", "item/completed",
        "thread/tokenUsage/updated", "turn/completed", "thread/status/changed",
    ]  # fmt: skip
    notes = [out.params for out in outs if isinstance(out, Notify)]
    assert notes[3]["item"] == {"type": "userMessage", "id": "in_1", "clientId": None, "content": [{"type": "text", "text": "hi", "text_elements": []}]}
    assert notes[7]["item"] == {"type": "agentMessage", "id": "msg_a", "text": "Running."}
    command = notes[10]["item"]
    assert command["cwd"] == "/w/sub" and command["command"] == "bash -c ls" and command["aggregatedOutput"] == "a\n"
    assert (command["exitCode"], command["durationMs"], command["status"]) == (0, 12, "completed")
    usage = notes[11]["tokenUsage"]
    assert usage["last"] == {"inputTokens": 10, "cachedInputTokens": 2, "outputTokens": 3, "reasoningOutputTokens": 1, "totalTokens": 13}
    assert usage["modelContextWindow"] == 1000
    assert notes[12]["turn"]["status"] == "completed" and notes[12]["turn"]["items"] == [notes[7]["item"]]
    assert translator.first_user_text == "hi" and translator.running_turn is None


def test_client_ids_name_the_clients_own_messages() -> None:
    log = Log()
    log.turn(input_id="in_7")
    _, outs = run(log.events, client_ids={"in_7": "client-7"})
    user = [o.params["item"] for o in outs if isinstance(o, Notify) and o.method == "item/completed"]
    assert user[0]["clientId"] == "client-7"


def test_an_interrupted_turn_closes_its_running_command() -> None:
    log = Log()
    log.turn()
    log.add("turn.delta", turn_id="turn_1", item_id="msg_a", delta="partial")
    log.add("tool.started", turn_id="turn_1", call_id="c1", name="exec_command", arguments={"cmd": "sleep 9"})
    log.add("turn.interrupted", turn_id="turn_1", reason="interrupt")
    _, outs = run(log.events)
    assert methods(outs)[-2:] == ["item/completed", "turn/completed"]
    assert outs[-2].params["item"]["status"] == "failed"  # type: ignore[union-attr]
    assert outs[-1].params["turn"]["status"] == "interrupted" and outs[-1].params["turn"]["durationMs"] > 0  # type: ignore[union-attr]


def test_a_failed_turn_says_why() -> None:
    log = Log()
    log.turn()
    log.add("turn.retry", turn_id="turn_1", attempt=1, delay_s=1.0, reason="503")
    log.add("turn.error", turn_id="turn_1", error={"code": "rate_limited", "message": "slow down"})
    log.add("turn.error", turn_id=None, error={"code": "internal", "message": "the worker crashed"})
    _, outs = run(log.events)
    errors = [o.params for o in outs if isinstance(o, Notify) and o.method == "error"]
    assert [e["willRetry"] for e in errors] == [True, False] and errors[1]["error"] == {"message": "slow down (rate_limited)"}
    done = next(o.params for o in outs if isinstance(o, Notify) and o.method == "turn/completed")
    assert done["turn"]["status"] == "failed" and done["turn"]["error"] == {"message": "slow down (rate_limited)"}
    assert outs[-1] == Notify("warning", {"threadId": UUID, "message": "the worker crashed (internal)"})


def test_reasoning_streams_as_a_summary() -> None:
    log = Log()
    log.turn()
    log.add("turn.reasoning_delta", turn_id="turn_1", item_id="rs_1", delta="thinking")
    log.add("item.completed", turn_id="turn_1", item={"type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking"}], "encrypted_content": "x"})
    _, outs = run(log.events)
    assert methods(outs)[-3:] == ["item/started", "item/reasoning/summaryTextDelta", "item/completed"]
    assert outs[-1].params["item"] == {"type": "reasoning", "id": "rs_1", "summary": ["thinking"], "content": []}  # type: ignore[union-attr]


def test_messages_without_deltas_are_started_and_completed() -> None:
    log = Log()
    log.turn()
    log.add("item.completed", turn_id="turn_1", item={"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "at once"}]})
    _, outs = run(log.events)
    assert methods(outs)[-2:] == ["item/started", "item/completed"]
    assert outs[-2].params["item"]["id"] == outs[-1].params["item"]["id"] == "item-5"  # type: ignore[union-attr]


def test_replayed_and_live_events_overlap_without_repeats() -> None:
    log = Log()
    log.turn()
    translator, first = run(log.events)
    assert all(translator.feed(event) == [] for event in log.events)
    gap = {"event": "events.gap", "thread_id": THREAD, "seq": 4, "ts": 0, "data": {"from_seq": 5, "to_seq": 9}}
    assert translator.feed(gap) == [] and translator.last_seq == 4


def test_approvals_are_asked_and_withdrawn() -> None:
    log = Log()
    created(log)
    log.turn()
    log.add("tool.started", turn_id="turn_1", call_id="c1", name="apply_patch", arguments={"input": "*** Begin Patch\n*** Delete File: x\n*** End Patch"})
    log.add("approval.requested", request_id="apr_1", turn_id="turn_1", call_id="c1", tool="apply_patch", summary="apply_patch: delete x", requested_at=200.0)
    translator, outs = run(log.events)
    ask = outs[-2]
    assert isinstance(ask, AskApproval) and ask.method == "item/fileChange/requestApproval"
    assert ask.params == {"threadId": UUID, "turnId": "turn_1", "itemId": "c1", "startedAtMs": 200000, "reason": "apply_patch: delete x"}
    assert outs[-1] == Notify("thread/status/changed", {"threadId": UUID, "status": {"type": "active", "activeFlags": ["waitingOnApproval"]}})
    assert translator.pending_asks({"apr_1"}) == [ask] and translator.pending_asks(set()) == []
    ended = translator.feed(log.add("approval.resolved", request_id="apr_1", call_id="c1", decision="deny"))
    assert ended[0] == ApprovalEnded("apr_1", "deny") and translator.status == {"type": "active", "activeFlags": []}


def test_history_keeps_every_turn() -> None:
    log = Log()
    for number in (1, 2):
        log.turn(f"turn_{number}", f"q{number}", f"in_{number}")
        log.add("turn.completed", turn_id=f"turn_{number}")
    translator, _ = run(log.events, keep_turns=True)
    assert [(turn.id, turn.seq) for turn in translator.turns] == [("turn_1", 2), ("turn_2", 7)]
    assert [entry.item["id"] for turn in translator.turns for entry in turn.entries] == ["in_1", "in_2"]


def test_patch_changes_name_every_file() -> None:
    patch = "*** Begin Patch\n*** Delete File: gone.txt\n*** Update File: a.py\n*** Move to: b/c.py\n@@ def f\n-x\n+y\n*** End Patch"
    assert described.patch_changes(patch, "/w") == [
        {"path": "/w/gone.txt", "kind": {"type": "delete"}, "diff": ""},
        {"path": "/w/a.py", "kind": {"type": "update", "move_path": "/w/b/c.py"}, "diff": "@@ def f\n-x\n+y\n"},
    ]
    assert described.patch_changes("not a patch", "/w") == []


def test_a_huge_patch_lists_its_files_without_parsing() -> None:
    """Past 1 MiB a patch is not parsed on the event loop: its files are listed, no diffs."""
    body = "".join(f"+line {n}\n" for n in range(200_000))
    patch = f"*** Begin Patch\n*** Add File: big.txt\n{body}*** Update File: a.py\n*** Move to: b.py\n@@\n-x\n+y\n*** Delete File: c\n*** End Patch"
    assert len(patch) > described.FULLY_DESCRIBED_CHARS
    assert described.patch_changes(patch, "/w") == [
        {"path": "/w/big.txt", "kind": {"type": "add"}, "diff": ""},
        {"path": "/w/a.py", "kind": {"type": "update", "move_path": "/w/b.py"}, "diff": ""},
        {"path": "/w/c", "kind": {"type": "delete"}, "diff": ""},
    ]


def test_plans_rate_limits_and_images() -> None:
    log = Log()
    created(log)
    log.turn()
    log.add("tool.started", turn_id="turn_1", call_id="c1", name="update_plan", arguments={"plan": []})
    log.add("plan.updated", turn_id="turn_1", explanation="why", steps=[{"step": "a", "status": "in_progress"}, {"step": "b", "status": "pending"}])
    log.add("tool.completed", turn_id="turn_1", call_id="c1", name="update_plan", ok=True, output="Plan updated")
    limits = {"limit_id": "codex", "primary": {"used_percent": 42.4, "window_minutes": 300, "resets_at": 1900000000}, "credits": {"has_credits": True, "unlimited": False}, "plan_type": "plus"}
    log.add("account.rate_limits", turn_id="turn_1", limits=[limits])
    log.add("tool.started", turn_id="turn_1", call_id="c2", name="view_image", arguments={"path": "shot.png"})
    log.add("tool.completed", turn_id="turn_1", call_id="c2", name="view_image", ok=True, output="")
    _, outs = run(log.events)
    notes = [out for out in outs if isinstance(out, Notify)][4:]
    assert [n.method for n in notes] == ["turn/plan/updated", "account/rateLimits/updated", "item/started", "item/completed"]
    assert notes[0].params["plan"] == [{"step": "a", "status": "inProgress"}, {"step": "b", "status": "pending"}]
    snapshot = notes[1].params["rateLimits"]
    assert snapshot["primary"] == {"usedPercent": 42, "windowDurationMins": 300, "resetsAt": 1900000000} and snapshot["planType"] == "plus"
    assert notes[3].params["item"] == {"type": "imageView", "id": "c2", "path": "/w/shot.png"}


def test_compaction_is_an_item_and_a_waiting_turn_a_warning() -> None:
    log = Log()
    log.add("turn.waiting", turn_id="turn_1", reason="4 sub-agent turns are running (max_running_subagents)")
    log.turn()
    log.add("thread.compacted", items_before=40, items_after=3, reason="auto")
    _, outs = run(log.events)
    assert outs[0] == Notify("warning", {"threadId": UUID, "message": "The turn waits: 4 sub-agent turns are running (max_running_subagents)"})
    assert methods(outs)[-2:] == ["item/started", "item/completed"]
    assert outs[-1].params["item"] == {"type": "contextCompaction", "id": "item-6"}  # type: ignore[union-attr]
