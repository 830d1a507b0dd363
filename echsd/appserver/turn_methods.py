"""``turn/*`` methods: send, steer and interrupt through the thread's actor.

``turn/start`` is echsd's ``send`` (queued behind a running turn), ``turn/steer`` its
``steer``, ``turn/interrupt`` its ``interrupt``. The response names the turn that took the
input, and goes out before that turn's ``turn/started`` (the feed holds its notifications
while the input is acknowledged). An input queued behind another turn is answered when its
own turn starts; one that is dropped instead (interrupt with ``--clear-queue``, kill) gets
an error answer.
"""

from __future__ import annotations

from typing import Any

import trio

from echsd.appserver.connection import ANSWERED, Answered, Connection
from echsd.appserver import shapes
from echsd.appserver.feed import ThreadFeed
from echsd.appserver.framing import INVALID_PARAMS, INVALID_REQUEST, Request, RpcError
from echsd.appserver.thread_methods import thread_param
from echsd.ops.threads import Configure, Get, Interrupt, Send


def input_text(params: dict[str, Any]) -> str:
    """The text of a ``UserInput`` list (echsd takes text; other kinds are refused)."""
    parts = params.get("input")
    if not isinstance(parts, list) or not parts:
        raise RpcError(INVALID_PARAMS, "input must be a non-empty list of UserInput")
    texts = []
    for part in parts:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind in ("mention", "skill"):
            continue  # their text is part of the message text already
        else:
            raise RpcError(INVALID_PARAMS, f"echsd takes text input only (got an input of type {kind!r})")
    text = "\n".join(texts)
    if not text.strip():
        raise RpcError(INVALID_PARAMS, "the input has no text")
    return text


def _turn(turn_id: str) -> dict[str, Any]:
    return {"id": turn_id, "items": [], "itemsView": "notLoaded", "status": "inProgress", "error": None}


async def turn_start(conn: Connection, request: Request) -> Answered:
    params = request.params
    thread_id = thread_param(params)
    text = input_text(params)
    if params.get("outputSchema") is not None:
        raise RpcError(INVALID_PARAMS, "echsd does not constrain replies to an outputSchema")
    await _reconfigure(conn, thread_id, params)
    feed = await conn.attach(thread_id)
    client_id = params.get("clientUserMessageId") if isinstance(params.get("clientUserMessageId"), str) else None
    return await _send(conn, request, feed, thread_id, text, "send", client_id, lambda turn_id: {"turn": _turn(turn_id)})


async def turn_steer(conn: Connection, request: Request) -> Answered:
    params = request.params
    thread_id = thread_param(params)
    text = input_text(params)
    expected = params.get("expectedTurnId")
    running = (await conn.run_op(Get(thread_id=thread_id))).get("active_turn")
    if running is None or running != expected:
        raise RpcError(INVALID_REQUEST, f"turn {expected!r} is not running (running: {running!r}); start a new turn")
    feed = await conn.attach(thread_id)
    client_id = params.get("clientUserMessageId") if isinstance(params.get("clientUserMessageId"), str) else None
    return await _send(conn, request, feed, thread_id, text, "steer", client_id, lambda turn_id: {"turnId": turn_id})


async def _send(conn: Connection, request: Request, feed: ThreadFeed, thread_id: str, text: str, mode: str, client_id: str | None, result: Any) -> Answered:
    """Send ``text``; answer with ``result(turn_id)`` once the input's turn is known."""
    answered = trio.Event()

    def outcome(turn_id: str | None, dropped: str | None) -> None:
        if turn_id is not None:
            conn.respond(request.id, result(turn_id))
        else:
            conn.fail(request.id, INVALID_REQUEST, f"the input was dropped: {dropped}")
        answered.set()

    feed.hold()
    try:
        ack = await conn.run_op(Send(thread_id=thread_id, text=text, mode=mode, client_msg_id=client_id))
        input_id = ack["input_id"]
        conn.remember_client_id(input_id, client_id)
        turn_id = feed.turn_of(input_id)
        if ack["disposition"] == "steered":
            turn_id = str(request.params.get("expectedTurnId"))  # it joins the turn checked to be running
        if turn_id is not None:
            outcome(turn_id, None)
        else:
            feed.expect(input_id, outcome)
    finally:
        feed.release()
    try:
        await answered.wait()
    finally:
        feed.forget(input_id)
    return ANSWERED


async def _reconfigure(conn: Connection, thread_id: str, params: dict[str, Any]) -> None:
    """A model or effort chosen in the client (``/model``) becomes the thread's, and so does
    an approval or sandbox policy the client *changes* (``/approvals``): the TUI sends its
    policies with every turn, so the first it sends is only noted, and a later different one
    is the user's choice. Never a policy the client merely repeats over the thread's own."""
    config = (await conn.run_op(Get(thread_id=thread_id)))["config"]
    changes: dict[str, Any] = {}
    if isinstance(params.get("model"), str) and params["model"] and params["model"] != config.get("model"):
        changes["model"] = params["model"]
    if isinstance(params.get("effort"), str) and params["effort"] != config.get("reasoning"):
        changes["reasoning"] = params["effort"]
    sent = (params.get("approvalPolicy"), params.get("sandboxPolicy"))
    before = conn.policies_sent.get(thread_id)
    conn.policies_sent[thread_id] = sent
    if before is not None:
        try:
            if sent[0] is not None and sent[0] != before[0]:
                changes["approval"] = shapes.echsd_approval(sent[0])
            if sent[1] is not None and sent[1] != before[1]:
                changes.update(shapes.echsd_sandbox(sent[1]) or {})
        except ValueError as exc:
            raise RpcError(INVALID_PARAMS, str(exc)) from None
    if changes:
        await conn.run_op(Configure(thread_id=thread_id, config=changes))


async def turn_interrupt(conn: Connection, request: Request) -> dict[str, Any]:
    thread_id = thread_param(request.params)
    running = (await conn.run_op(Get(thread_id=thread_id))).get("active_turn")
    if running is not None and running == request.params.get("turnId"):
        await conn.run_op(Interrupt(thread_id=thread_id))
    return {}


METHODS = {
    "turn/start": turn_start,
    "turn/steer": turn_steer,
    "turn/interrupt": turn_interrupt,
}
