"""Event logs for the translator's tests: a thread's envelopes built step by step, and a
run through ``ThreadTranslator`` whose every message must match the protocol's schema."""

from __future__ import annotations

from typing import Any

from echsd.appserver.ids import thread_uuid
from echsd.appserver.translate import AskApproval, Notify, Out, ThreadTranslator
from tests.appserver.protocol_schema import check_server_message

THREAD = "thr_00000000000000aa"
UUID = thread_uuid(THREAD)


class Log:
    """Builds a thread's event envelopes with contiguous seqs."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def add(self, event: str, **data: Any) -> dict[str, Any]:
        envelope = {"event": event, "thread_id": THREAD, "seq": len(self.events) + 1, "ts": 100.0 + len(self.events), "data": data}
        self.events.append(envelope)
        return envelope

    def turn(self, turn_id: str = "turn_1", text: str = "hi", input_id: str = "in_1") -> None:
        self.add("thread.state", state="running")
        self.add("turn.started", turn_id=turn_id, input_ids=[input_id])
        self.add("input.delivered", input_id=input_id, turn_id=turn_id, mode="send")
        self.add("item.completed", turn_id=turn_id, item={"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})


def run(events: list[dict[str, Any]], **options: Any) -> tuple[ThreadTranslator, list[Out]]:
    """Feed ``events``; every message they turn into must match the protocol's schema."""
    translator = ThreadTranslator(THREAD, **options)
    outs: list[Out] = []
    for event in events:
        outs.extend(translator.feed(event))
    return translator, checked(outs)


def checked(outs: list[Out]) -> list[Out]:
    """``outs``, each of which must match the protocol's schema."""
    for out in outs:
        if isinstance(out, Notify):
            check_server_message({"method": out.method, "params": out.params}, {})
        elif isinstance(out, AskApproval):
            check_server_message({"id": 0, "method": out.method, "params": out.params}, {})
    return outs


def methods(outs: list[Out]) -> list[str]:
    return [out.method if isinstance(out, (Notify, AskApproval)) else "ENDED" for out in outs]


def created(log: Log, cwd: str = "/w") -> None:
    log.add("thread.created", thread={"thread_id": THREAD, "config": {"cwd": cwd, "model": "m"}})
