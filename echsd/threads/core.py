"""The thread core: one object owns a thread's state and makes every decision about it.

Rules of this module (after h11's ``_state.py``): everything that changes a thread's state
(its state, config, usage, history, queue, steering, the running turn's bookkeeping, a
compaction in progress, its children) lives here and nowhere else. Nothing here awaits or
does IO: a method checks, mutates memory and returns ``Effects`` (the events and store
statements of one atomic unit, plus what the IO shell must do next). Whether a transition
is legal is decided by the tables in ``state.py``; an illegal one raises.

Theory of operation
-------------------
The actor (``actor.py``) is the IO shell: it waits for the store writer to have room, calls
one core method, and submits the returned unit with no checkpoint in between, so decisions
are never interleaved. Then it acts on the effects: start the turn task, cancel a turn or a
compaction, answer replies parked until a turn's end. A turn ended from outside (interrupt,
pause, kill, shutdown) is only *marked* here (``end_reason``); the turn task notices the
cancellation and calls ``finish_turn``, which writes everything that closes the turn in one
unit: outputs for dangling calls, usage, the terminal event, the thread's new state.

``queued`` is derived from the queue. Before the actor has loaded the thread (histories
load lazily), the core holds only the thread row and the number of inputs waiting. The
inputs themselves are kept by ``InputQueue`` and the history by ``Conversation``: parts
of the core that only it calls. The transitions clients trigger (interrupt, pause, resume,
kill, shutdown) are in ``control.py``, those of the running turn in ``turndecisions.py``,
recovery and compaction in ``historydecisions.py``, the tree and deletion in
``treedecisions.py``: mixins of this one class, so the one owner's rules are in a few short
files, not one long one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from echsd.events import ExecSessionEnded, ExecSessionStarted, InputDelivered, PlanUpdated, StateChanged, ThreadConfigured, TurnStarted
from echsd.codex import strip_reasoning_items
from echsd.errors import InvalidState
from echsd.ids import new_input_id, new_turn_id
from echsd.ops.threads import Rename
from echsd.store import ThreadRow, ops
from echsd.threads.config import ConfigRules, ThreadConfig, reconfigure
from echsd.threads.context import TurnContext, context_message, sent_record
from echsd.threads.control import ControlDecisions
from echsd.threads.conversation import Conversation
from echsd.threads.effects import Effects, TurnState, empty_usage
from echsd.threads.handlers import decides
from echsd.threads.historydecisions import HistoryDecisions
from echsd.threads.inputqueue import InputQueue
from echsd.threads.inputs import PendingInput
from echsd.threads.state import Disposition, InputMode, ThreadState, Trigger, input_disposition, transition
from echsd.threads.treedecisions import TreeDecisions
from echsd.threads.turndecisions import TurnDecisions
from echsd.threads.workspacedecisions import WorkspaceDecisions

TASK_CHARS = 200  # of a thread's first input, kept as its task (a worktree commit's message)


class ThreadCore(ControlDecisions, TurnDecisions, HistoryDecisions, TreeDecisions, WorkspaceDecisions):
    __slots__ = (
        "_kill_reason",
        "_new_turn_id",
        "active_turn",
        "children",
        "config",
        "conversation",
        "created_at",
        "extra",
        "inputs",
        "parent",
        "retired",
        "state",
        "stopping",
        "thread_id",
        "turn",
        "usage",
        "workspace_busy",
    )  # fmt: skip

    def __init__(
        self,
        thread_id: str,
        *,
        parent: str | None,
        created_at: float,
        state: ThreadState,
        config: ThreadConfig,
        usage: dict[str, int] | None = None,
        active_turn: str | None = None,
        extra: dict[str, Any] | None = None,
        children: Iterable[str] = (),
        pending_inputs: int = 0,
        new_turn_id: Callable[[], str] = new_turn_id,
    ) -> None:
        self.thread_id = thread_id
        self.parent = parent
        self.created_at = created_at
        self.state = state
        self.config = config
        self.usage: dict[str, Any] = empty_usage() | {"turns": 0} | dict(usage or {})
        self.active_turn = active_turn
        self.extra: dict[str, Any] = dict(extra or {})
        self.children: list[str] = list(children)
        self.conversation = Conversation(thread_id)  # its items load when the actor starts
        self.inputs = InputQueue(thread_id, pending_inputs)
        self.turn: TurnState | None = None
        self.stopping = False  # the daemon is shutting down: no new turn
        self.retired = False  # being deleted: takes nothing
        self.workspace_busy: str | None = None  # git work that holds the thread still (an undo, a merge)
        self._kill_reason = "killed"
        self._new_turn_id = new_turn_id

    @classmethod
    def from_row(cls, row: ThreadRow, *, pending_inputs: int = 0, children: Iterable[str] = ()) -> ThreadCore:
        return cls(
            row.thread_id,
            parent=row.parent,
            created_at=row.created_at,
            state=ThreadState(row.state),
            config=ThreadConfig.from_dict(row.config),
            usage=row.usage,
            active_turn=row.active_turn,
            extra=row.extra,
            children=children,
            pending_inputs=pending_inputs,
        )

    # ---- reads ---------------------------------------------------------------------------

    @property
    def history(self) -> list[dict[str, Any]] | None:
        """The items as sent to the model (None until loaded). Read only."""
        return self.conversation.items

    @property
    def compaction(self) -> int | None:
        return self.conversation.compaction

    @property
    def queued(self) -> int:
        return len(self.inputs)

    @property
    def work_status(self) -> str:
        """Where the thread's work stands, as a parent waiting on it sees it: ``running``
        (a turn runs, or waiting input will start one), ``paused``, ``killed``, else how its
        last turn ended (``completed``, ``interrupted``, ``error``), or ``idle`` if it never ran."""
        if self.state is ThreadState.KILLED:
            return "killed"
        if self.state is ThreadState.RUNNING or (self.state is ThreadState.IDLE and self.queued):
            return "running"
        if self.state is ThreadState.PAUSED:
            return "paused"
        last = self.extra.get("last_turn") or {}
        return str(last.get("status") or "idle")

    @property
    def final_text(self) -> str:
        """The last assistant message of the last finished turn."""
        return str((self.extra.get("last_turn") or {}).get("final_text") or "")

    @property
    def has_steers(self) -> bool:
        return bool(self.inputs.steering)

    @property
    def alive(self) -> bool:
        return self.state is not ThreadState.KILLED

    def to_row(self) -> ThreadRow:
        return ThreadRow(
            thread_id=self.thread_id,
            parent=self.parent,
            created_at=self.created_at,
            state=self.state.value,
            config=self.config.to_dict(),
            usage=dict(self.usage),
            active_turn=self.active_turn,
            extra=dict(self.extra),
            updated_at=time.time(),
        )

    def snapshot(self) -> dict[str, Any]:
        """The thread object of CONTRACT.md 2.5 (the shell adds ``last_seq``)."""
        data = {
            "thread_id": self.thread_id,
            "name": self.extra.get("name"),
            "state": self.state.value,
            "parent": self.parent,
            "children": list(self.children),
            "config": self.config.to_dict(),
            "queued": self.queued,
            "usage": dict(self.usage),
            "created_at": self.created_at,
            "active_turn": self.active_turn,
            "last_turn": self.extra.get("last_turn"),  # {turn_id, status, reason, final_text} of the last turn that ended
        }
        if self.compaction is not None:
            data["compacting"] = True
        if self.extra.get("plan"):
            data["plan"] = self.extra["plan"]
        if self.extra.get("agent_type"):
            data["agent_type"] = self.extra["agent_type"]
        sent = self.extra.get("context")
        if sent:  # what the model was last told of where it works (echs show)
            data["context"] = {"project_docs": sent["project_docs"], "project_docs_state": sent["project_docs_state"], "environment": sent["env"]}
        worktree = self.worktree
        data["worktree"] = {"path": worktree["path"], "branch": worktree["branch"]} if worktree else None
        data["forked_from"] = self.extra.get("forked_from")
        if self.extra.get("undone_turns"):
            data["undone_turns"] = list(self.extra["undone_turns"])
        if self.extra.get("forked_from"):
            data["forked_at_turn"] = self.extra.get("forked_at_turn")
        return data

    def previous_ack(self, client_msg_id: str, text: str) -> dict[str, Any] | None:
        return self.inputs.previous_ack(client_msg_id, text)

    def remember_ack(self, client_msg_id: str, ack: dict[str, Any], text: str) -> None:
        self.inputs.remember_ack(client_msg_id, ack, text)

    # ---- input ---------------------------------------------------------------------------

    def receive_input(
        self,
        text: str,
        mode: InputMode,
        client_msg_id: str | None = None,
        input_id: str | None = None,
        *,
        attachments: Sequence[dict[str, Any]] = (),
        steps: int | None = None,
        context: TurnContext | None = None,
    ) -> tuple[dict[str, Any], Effects]:
        """An input arrives: it starts a turn, waits in the queue or steers the running turn.

        ``steps`` > 1 (default: the config's) makes it the start of an autonomous run,
        unless it steers a running turn. ``context``: what the model is told of where it works,
        sent first if the input starts a turn and something changed since it was last sent."""
        self.check_alive()
        disposition = input_disposition(
            self.state,
            mode,
            steer_accepted=self.turn is not None and self.turn.accepting_steer,
            nothing_ahead=not self.inputs and self.compaction is None and not self.stopping and self.workspace_busy is None,
        )
        pending = PendingInput(
            input_id=input_id or new_input_id(),
            thread_id=self.thread_id,
            text=text,
            mode=mode,
            disposition=disposition,
            client_msg_id=client_msg_id,
            attachments=list(attachments),
        )
        steps = steps or self.config.steps
        if steps > 1 and disposition is not Disposition.STEERED:
            self.extra.setdefault("runs", {})[pending.input_id] = steps  # stored with the thread row
        if disposition is Disposition.STARTED:
            fx = self._start_turn([pending], context)
        elif disposition is Disposition.QUEUED:
            fx = Effects()
            self.inputs.append(fx, pending)
            if steps > 1:
                fx.statements.append(ops.upsert_thread(self.to_row()))
        else:
            fx = Effects()
            self.inputs.steer(fx, pending)
        ack = pending.ack()
        if client_msg_id is not None:
            self.remember_ack(client_msg_id, ack, text)
        return ack, fx

    @property
    def can_start_next(self) -> bool:
        """Whether ``next_turn`` would start a turn now (the actor gathers its context first)."""
        idle = self.state is ThreadState.IDLE and self.turn is None and self.compaction is None and self.workspace_busy is None
        return idle and not self.stopping and not self.retired and bool(self.inputs)

    def next_turn(self, context: TurnContext | None = None) -> Effects | None:
        """Start a turn for the head of the queue, if the thread can take one now."""
        if not self.can_start_next:
            return None
        pending = self.inputs.popleft()
        return self._start_turn([pending], context) if pending is not None else None

    def configure(self, changes: Any, rules: ConfigRules) -> Effects:
        """Hot swap: a running turn uses the new config from its next model request."""
        self.check_alive()
        updated, changed = reconfigure(self.config, changes, rules)
        self.config = updated
        fx = Effects()
        fx.emit(ThreadConfigured, {"config": updated.to_dict(), "changed": changed})
        fx.statements.append(ops.upsert_thread(self.to_row()))
        if "model" in changed and self.history:  # encrypted reasoning is readable by its own model only
            kept, _removed = strip_reasoning_items(self.history)
            self.conversation.prune(fx, kept, "reasoning of the previous model left out")
        return fx

    @decides(Rename)
    def rename(self, op: Rename) -> Effects:
        """``thread.rename``: a display name, kept with the thread row (None clears it)."""
        if op.name is None:
            self.extra.pop("name", None)
        else:
            self.extra["name"] = op.name.strip()
        fx = Effects()
        fx.statements.append(ops.upsert_thread(self.to_row()))
        return fx

    def session_started(self, session_id: int, turn_id: str, command: str) -> Effects:
        """An exec session outlives its call: remembered with the thread (its end is told at
        the latest by the next worker's recovery)."""
        self.extra.setdefault("sessions", {})[str(session_id)] = turn_id
        fx = Effects()
        fx.emit(ExecSessionStarted, {"session_id": session_id, "turn_id": turn_id, "command": command})
        fx.statements.append(ops.upsert_thread(self.to_row()))
        return fx

    def session_ended(self, session_id: int, reason: str, exit_code: int | None) -> Effects:
        sessions = self.extra.get("sessions") or {}
        sessions.pop(str(session_id), None)
        if not sessions:
            self.extra.pop("sessions", None)
        fx = Effects()
        fx.emit(ExecSessionEnded, {"session_id": session_id, "reason": reason, "exit_code": exit_code})
        fx.statements.append(ops.upsert_thread(self.to_row()))
        return fx

    def update_plan(self, explanation: str | None, steps: list[dict[str, str]]) -> Effects:
        """The model's task plan, kept on the thread (``plan.updated``)."""
        plan = {"explanation": explanation, "steps": steps}
        self.extra["plan"] = plan
        fx = Effects()
        fx.emit(PlanUpdated, {"turn_id": self.turn.turn_id if self.turn else None, **plan})
        fx.statements.append(ops.upsert_thread(self.to_row()))
        return fx

    # ---- helpers (every mutation below is reached from a public method above) -------------

    def check_alive(self) -> None:
        if self.retired:
            raise InvalidState(f"thread {self.thread_id} is being deleted")
        if self.state is ThreadState.KILLED:
            raise InvalidState(f"thread {self.thread_id} is killed")

    def _running_turn(self) -> TurnState:
        if self.turn is None:
            raise InvalidState(f"thread {self.thread_id} has no running turn")
        return self.turn

    def _start_turn(self, inputs: Sequence[PendingInput], context: TurnContext | None = None) -> Effects:
        turn = TurnState(turn_id=self._new_turn_id(), input_ids=[p.input_id for p in inputs], number=self.next_turn_number())
        self._join_run(turn, inputs[0].input_id)
        self.state = transition(self.state, Trigger.TURN_START)
        self.active_turn = turn.turn_id
        self.usage["turns"] = self.usage.get("turns", 0) + 1
        self.turn = turn
        if "task" not in self.extra:  # what the thread was asked first: its task, for people and commits
            self.extra["task"] = inputs[0].text.strip().split("\n", 1)[0][:TASK_CHARS]
        fx = Effects(start_turn=turn)
        fx.emit(StateChanged, {"state": self.state.value})
        fx.emit(TurnStarted, {"turn_id": turn.turn_id, "input_ids": turn.input_ids, "turn": turn.number})
        if context is not None:
            self._tell_context(fx, context, turn.turn_id)
        self._deliver(fx, inputs, turn.turn_id)
        fx.statements.append(ops.upsert_thread(self.to_row()))
        return fx

    def _tell_context(self, fx: Effects, context: TurnContext, turn_id: str) -> None:
        """Before the turn's input: what changed of the project instructions and environment
        since they were last sent (all of it the first time). Kept with the thread row."""
        message = context_message(context, self.extra.get("context"))
        self.extra["context"] = sent_record(context)
        if message is not None:
            self._append(fx, [message], turn_id)

    def _join_run(self, turn: TurnState, input_id: str) -> None:
        """A turn started by a run's first input, or by its continuation, belongs to it."""
        run = self.extra.get("autorun")
        steps = self.extra.get("runs", {}).pop(input_id, None)
        if run is not None and run.get("awaiting") == input_id:
            run["turns"] += 1
            turn.autorun = True
        elif steps:
            self.extra["autorun"] = {"input_id": input_id, "steps": steps, "turns": 1, "awaiting": None}
            turn.autorun = True

    def _deliver(self, fx: Effects, inputs: Sequence[PendingInput], turn_id: str) -> None:
        for pending in inputs:
            fx.statements.append(pending.write("delivered", turn_id=turn_id))
            fx.emit(InputDelivered, {"input_id": pending.input_id, "turn_id": turn_id, "mode": pending.mode.value})
        self._append(fx, [pending.item() for pending in inputs], turn_id)

    def _append(self, fx: Effects, items: Sequence[dict[str, Any]], turn_id: str | None) -> None:
        text = self.conversation.append(fx, items, turn_id)
        if text and self.turn is not None and turn_id == self.turn.turn_id:
            self.turn.final_text = text
            self.turn.final_text_at = len(self.history or ()) - 1

