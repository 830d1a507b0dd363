"""ThreadCore, table-driven and without an event loop: every state x trigger, turn endings,
steering, compaction, the tree, and recovery after a restart or a worker crash."""

from __future__ import annotations

import itertools
from typing import Any, Callable

import pytest

from echsd.errors import Conflict, EchsError, InvalidState
from echsd.store import InputRow, ThreadRow
from echsd.codex import default_catalog
from echsd.threads.config import ConfigRules, ThreadConfig
from echsd.threads.core import ThreadCore
from echsd.threads.effects import Effects, Park
from echsd.threads.history import check_invariants
from echsd.threads.state import InputMode, ThreadState

S = ThreadState
CONFIG = ThreadConfig(cwd="/tmp", model="m", reasoning="low", instructions="be brief", tools=("exec_command",))
CALL = {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"}


def new_core(history: list[dict[str, Any]] | None = None) -> ThreadCore:
    turns = itertools.count(1)
    core = ThreadCore("thr_0123456789abcdef", parent=None, created_at=0.0, state=S.IDLE, config=CONFIG, new_turn_id=lambda: f"turn_{next(turns)}")
    core.recover(history or [], [])
    return core


def core_in(state: ThreadState) -> ThreadCore:
    core = new_core()
    if state is S.RUNNING:
        core.receive_input("go", InputMode.SEND)
    elif state is S.PAUSED:
        core.pause()
    elif state is S.KILLED:
        core.kill()
    assert core.state is state
    return core


def types(fx: Effects) -> list[str]:
    return [event for event, _data in fx.events]


# trigger -> how to apply it to a core; each returns (answer, effects)
TRIGGERS: dict[str, Callable[[ThreadCore], tuple[Any, Effects]]] = {
    "send": lambda c: c.receive_input("more", InputMode.SEND),
    "queue": lambda c: c.receive_input("more", InputMode.QUEUE),
    "steer": lambda c: c.receive_input("more", InputMode.STEER),
    "interrupt": lambda c: c.interrupt(),
    "pause": lambda c: c.pause(),
    "resume": lambda c: c.resume(),
    "kill": lambda c: c.kill(),
    "shutdown": lambda c: c.shutdown(),
    "configure": lambda c: (None, c.configure({"reasoning": "high"}, ConfigRules(["exec_command"], default_catalog()))),
    "compact": lambda c: (c.begin_compaction(), Effects()),
    "turn_completed": lambda c: (None, c.finish_turn("completed")),
    "turn_error": lambda c: (None, c.finish_turn("error", {"code": "server_error", "message": "boom"})),
}

STARTED = ["thread.state", "turn.started", "input.delivered", "item.completed"]

# (state, trigger) -> (state after, event types, answer check) or the error raised
TABLE: dict[tuple[ThreadState, str], tuple[ThreadState, list[str], Callable[[Any], bool]] | type[EchsError]] = {
    (S.IDLE, "send"): (S.RUNNING, STARTED, lambda a: a["disposition"] == "started"),
    (S.IDLE, "queue"): (S.RUNNING, STARTED, lambda a: a["disposition"] == "started"),
    (S.IDLE, "steer"): (S.RUNNING, STARTED, lambda a: a["disposition"] == "started"),
    (S.IDLE, "interrupt"): (S.IDLE, [], lambda a: a["interrupted"] is False),
    (S.IDLE, "pause"): (S.PAUSED, ["thread.state"], lambda a: a["paused"] is True),
    (S.IDLE, "resume"): (S.IDLE, [], lambda a: a["resumed"] is False),
    (S.IDLE, "kill"): (S.KILLED, ["thread.killed", "thread.state"], lambda a: a["killed"] is True),
    (S.IDLE, "shutdown"): (S.IDLE, [], lambda a: a["interrupted"] is False),
    (S.IDLE, "configure"): (S.IDLE, ["thread.configured"], lambda a: True),
    (S.IDLE, "compact"): InvalidState,  # nothing to compact
    (S.IDLE, "turn_completed"): InvalidState,
    (S.IDLE, "turn_error"): InvalidState,
    (S.RUNNING, "send"): (S.RUNNING, ["input.queued"], lambda a: a["disposition"] == "queued"),
    (S.RUNNING, "queue"): (S.RUNNING, ["input.queued"], lambda a: a["disposition"] == "queued"),
    (S.RUNNING, "steer"): (S.RUNNING, [], lambda a: a["disposition"] == "steered"),
    (S.RUNNING, "interrupt"): (S.RUNNING, [], lambda a: a == Park("turn_1", "interrupt", {"cleared": 0})),
    (S.RUNNING, "pause"): (S.RUNNING, [], lambda a: a == Park("turn_1", "pause")),
    (S.RUNNING, "resume"): (S.RUNNING, [], lambda a: a["resumed"] is False),
    (S.RUNNING, "kill"): (S.RUNNING, [], lambda a: a == Park("turn_1", "kill", {"children": []})),
    (S.RUNNING, "shutdown"): (S.RUNNING, [], lambda a: a == Park("turn_1", "shutdown")),
    (S.RUNNING, "configure"): (S.RUNNING, ["thread.configured"], lambda a: True),
    (S.RUNNING, "compact"): Conflict,
    (S.RUNNING, "turn_completed"): (S.IDLE, ["turn.usage", "turn.completed", "thread.state"], lambda a: True),
    (S.RUNNING, "turn_error"): (S.IDLE, ["turn.usage", "turn.error", "thread.state"], lambda a: True),
    (S.PAUSED, "send"): (S.PAUSED, ["input.queued"], lambda a: a["disposition"] == "queued"),
    (S.PAUSED, "queue"): (S.PAUSED, ["input.queued"], lambda a: a["disposition"] == "queued"),
    (S.PAUSED, "steer"): (S.PAUSED, ["input.queued"], lambda a: a["disposition"] == "queued"),
    (S.PAUSED, "interrupt"): (S.PAUSED, [], lambda a: a["interrupted"] is False),
    (S.PAUSED, "pause"): (S.PAUSED, [], lambda a: a["paused"] is True),
    (S.PAUSED, "resume"): (S.IDLE, ["thread.state"], lambda a: a["resumed"] is True),
    (S.PAUSED, "kill"): (S.KILLED, ["thread.killed", "thread.state"], lambda a: a["killed"] is True),
    (S.PAUSED, "shutdown"): (S.PAUSED, [], lambda a: a["interrupted"] is False),
    (S.PAUSED, "configure"): (S.PAUSED, ["thread.configured"], lambda a: True),
    (S.PAUSED, "compact"): InvalidState,
    (S.PAUSED, "turn_completed"): InvalidState,
    (S.PAUSED, "turn_error"): InvalidState,
    **{(S.KILLED, trigger): InvalidState for trigger in TRIGGERS if trigger != "shutdown"},
    (S.KILLED, "shutdown"): (S.KILLED, [], lambda a: a["interrupted"] is False),
}


def test_the_table_covers_every_state_and_trigger() -> None:
    assert set(TABLE) == set(itertools.product(ThreadState, TRIGGERS))


@pytest.mark.parametrize(("state", "trigger"), list(TABLE), ids=lambda v: getattr(v, "value", v))
def test_state_x_trigger(state: ThreadState, trigger: str) -> None:
    core = core_in(state)
    expected = TABLE[(state, trigger)]
    if isinstance(expected, type):
        before = (core.snapshot(), list(core.history or []))
        with pytest.raises(expected):
            TRIGGERS[trigger](core)
        assert (core.snapshot(), list(core.history or [])) == before, "a refused trigger changes nothing"
        return
    after, events, check = expected
    answer, fx = TRIGGERS[trigger](core)
    assert core.state is after
    assert types(fx) == events
    assert check(answer)
    assert (fx.cancel_turn) == (isinstance(answer, Park))


@pytest.mark.parametrize(
    ("requests", "state", "reason"),
    [
        (["interrupt"], S.IDLE, "interrupt"),
        (["pause"], S.PAUSED, "pause"),
        (["kill"], S.KILLED, "kill"),
        (["shutdown"], S.IDLE, "shutdown"),
        (["interrupt", "kill"], S.KILLED, "kill"),  # the strongest reason decides
        (["pause", "interrupt"], S.PAUSED, "pause"),
        (["kill", "pause"], S.KILLED, "kill"),
        (["shutdown", "pause"], S.PAUSED, "pause"),
    ],
)
def test_a_turn_ended_from_outside_lands_by_its_strongest_reason(requests: list[str], state: ThreadState, reason: str) -> None:
    core = core_in(S.RUNNING)
    parks = [TRIGGERS[request](core)[0] for request in requests]
    fx = core.finish_turn("completed")  # whatever the loop saw, the turn was interrupted
    assert core.state is state and core.turn is None and core.active_turn is None
    assert fx.turn_end is not None and fx.turn_end.status == "interrupted" and fx.turn_end.reason == reason
    assert ("turn.interrupted", {"turn_id": "turn_1", "reason": reason}) in fx.events
    if state is S.KILLED:
        assert types(fx)[-2:] == ["thread.killed", "thread.state"]
    for park in parks:
        answer = park.answer(core.thread_id, fx.turn_end)
        assert answer["interrupted"] is True and answer["state"] == state.value


def test_an_interrupted_turn_repairs_dangling_calls_and_keeps_the_queue() -> None:
    core = core_in(S.RUNNING)
    core.append_items([CALL])
    core.receive_input("later", InputMode.QUEUE)
    core.interrupt()
    fx = core.finish_turn("completed")
    assert check_invariants(core.history or []) == []
    assert core.history[-1]["output"].startswith("aborted: the turn was interrupted")  # type: ignore[index]
    started = core.next_turn()  # the queue continues
    assert started is not None and started.start_turn is not None and core.state is S.RUNNING
    assert "turn.interrupted" in types(fx)


def test_interrupt_with_clear_queue_drops_every_queued_input() -> None:
    core = core_in(S.RUNNING)
    core.receive_input("a", InputMode.QUEUE)
    core.receive_input("b", InputMode.QUEUE)
    park, fx = core.interrupt(clear_queue=True)
    assert types(fx) == ["input.dropped", "input.dropped"] and park.extra == {"cleared": 2}
    assert core.queued == 0


def test_kill_drops_queued_and_steering_inputs() -> None:
    core = core_in(S.RUNNING)
    core.receive_input("q", InputMode.QUEUE)
    core.receive_input("s", InputMode.STEER)
    core.kill("ancestor thr_x was killed")
    fx = core.finish_turn("completed")
    dropped = [data for event, data in fx.events if event == "input.dropped"]
    assert len(dropped) == 2 and all(d["reason"] == "ancestor thr_x was killed" for d in dropped)
    assert ("thread.killed", {"reason": "ancestor thr_x was killed"}) in fx.events


def test_steers_join_the_turn_at_a_boundary_and_late_ones_wait_for_the_next_turn() -> None:
    core = core_in(S.RUNNING)
    core.receive_input("steer one", InputMode.STEER)
    assert core.settle() is True  # a steer waits: the turn goes on
    fx = core.deliver_steers()
    assert fx is not None and types(fx) == ["input.delivered", "item.completed"]
    assert core.deliver_steers() is None
    assert core.settle() is False  # nothing waits: the turn takes no more steers
    ack, _fx = core.receive_input("too late", InputMode.STEER)
    assert ack["disposition"] == "queued"


def test_a_steer_that_missed_its_turn_goes_to_the_head_of_the_queue() -> None:
    core = core_in(S.RUNNING)
    core.receive_input("queued", InputMode.QUEUE)
    core.receive_input("steered", InputMode.STEER)
    core.interrupt()
    fx = core.finish_turn("completed")
    assert ("input.queued", {"input_id": fx.events[-2][1]["input_id"], "position": 1}) in fx.events
    started = core.next_turn()
    assert started is not None
    delivered = [data for event, data in started.events if event == "item.completed"]
    assert delivered[0]["item"]["content"][0]["text"] == "steered"


def test_usage_and_final_text_belong_to_the_turn() -> None:
    core = core_in(S.RUNNING)
    core.append_items([{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done!"}]}])
    core.add_usage({"input_tokens": 10, "output_tokens": 3})
    fx = core.finish_turn("completed")
    assert ("turn.completed", {"turn_id": "turn_1", "final_text": "done!"}) in fx.events
    assert core.usage["input_tokens"] == 10 and core.usage["output_tokens"] == 3 and core.usage["turns"] == 1


def test_compaction_holds_input_and_a_cancelled_one_changes_nothing() -> None:
    history = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}]
    core = new_core(history)
    token, items = core.begin_compaction()
    assert items == history
    with pytest.raises(Conflict):
        core.begin_compaction()
    ack, _fx = core.receive_input("meanwhile", InputMode.SEND)
    assert ack["disposition"] == "queued" and core.state is S.IDLE  # no turn under a compaction
    answer, fx = core.interrupt()
    assert answer["interrupted"] is True and answer["cancelled"] == "compaction" and fx.cancel_compaction
    assert core.finish_compaction(token, [{"type": "message", "role": "user", "content": []}]) is None
    assert core.history == history
    assert core.next_turn() is not None  # the queued input runs now


def test_a_finished_compaction_replaces_the_history() -> None:
    core = new_core([{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "x"}]}] * 3)
    token, _items = core.begin_compaction()
    fx = core.finish_compaction(token, [{"type": "compaction", "encrypted_content": "abc"}])
    assert fx is not None and fx.events == [("thread.compacted", {"items_before": 3, "items_after": 1, "reason": "manual"})]
    assert core.history == [{"type": "compaction", "encrypted_content": "abc"}] and core.compaction is None


def test_a_thread_being_killed_takes_no_children() -> None:
    core = core_in(S.RUNNING)
    core.add_child("thr_1111111111111111")
    core.kill()
    with pytest.raises(InvalidState, match="being killed"):
        core.add_child("thr_2222222222222222")
    assert core.children == ["thr_1111111111111111"]


def test_idempotent_acks_are_remembered() -> None:
    core = new_core()
    ack, _fx = core.receive_input("once", InputMode.SEND, client_msg_id="k1")
    assert core.previous_ack("k1", "once") == ack
    assert "different text" in core.previous_ack("k1", "twice")["note"]


# ---- recovery ---------------------------------------------------------------------------


def stored_core(state: ThreadState, active_turn: str | None = None) -> ThreadCore:
    row = ThreadRow("thr_0123456789abcdef", None, 0.0, state.value, CONFIG.to_dict(), {}, active_turn)
    return ThreadCore.from_row(row, pending_inputs=2)


def input_row(input_id: str, status: str, position: int) -> InputRow:
    return InputRow(input_id, "thr_0123456789abcdef", None, "steer" if status == "steering" else "queue", input_id, status=status, position=position, disposition="queued")


def test_before_loading_the_core_counts_the_stored_queue() -> None:
    core = stored_core(S.IDLE)
    assert core.queued == 2 and core.history is None
    with pytest.raises(InvalidState, match="not loaded"):
        core.receive_input("x", InputMode.SEND)


@pytest.mark.parametrize(("crashed", "terminal"), [(None, "turn.interrupted"), ("RuntimeError: boom", "turn.error")])
def test_recovery_closes_the_open_turn(crashed: str | None, terminal: str) -> None:
    core = stored_core(S.RUNNING, active_turn="turn_9")
    fx = core.recover([{"type": "message", "role": "user", "content": []}, CALL], [], crashed)
    assert core.state is S.IDLE and core.active_turn is None
    assert types(fx) == ["item.completed", terminal, "thread.state"]
    assert check_invariants(core.history or []) == []
    if crashed:
        assert "boom" in fx.events[1][1]["error"]["message"]
    else:
        assert fx.events[1][1] == {"turn_id": "turn_9", "reason": "restart"}


def test_recovery_puts_stranded_steers_first_and_keeps_the_queue() -> None:
    core = stored_core(S.IDLE)
    fx = core.recover([], [input_row("in_steer", "steering", 0), input_row("in_q1", "queued", 1), input_row("in_q2", "queued", 2)])
    assert types(fx) == ["input.queued"] and fx.events[0][1]["input_id"] == "in_steer"
    assert core.inputs.ids() == ["in_steer", "in_q1", "in_q2"]
    started = core.next_turn()
    assert started is not None and started.start_turn is not None and started.start_turn.input_ids == ["in_steer"]


def test_recovery_of_a_quiet_thread_writes_nothing() -> None:
    for state in (S.IDLE, S.PAUSED, S.KILLED):
        core = stored_core(state)
        fx = core.recover([], [])
        assert fx.events == [] and fx.statements == [] and core.state is state
    paused = stored_core(S.PAUSED)
    paused.recover([], [input_row("in_q1", "queued", 1)])
    assert paused.next_turn() is None  # paused survives restart


def test_shutdown_starts_nothing_new() -> None:
    core = new_core()
    core.shutdown()
    ack, fx = core.receive_input("during shutdown", InputMode.SEND)
    assert ack["disposition"] == "queued" and types(fx) == ["input.queued"]
    assert core.next_turn() is None and core.state is S.IDLE
