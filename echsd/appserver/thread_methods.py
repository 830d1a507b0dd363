"""``thread/*`` methods: echsd threads as app-server threads.

``thread/start`` creates an echsd thread; ``thread/resume`` attaches to any existing one
(also one made with ``echs``); both make the connection watch it (its feed), and a resume
is followed by the thread's token usage so far, as Codex's server replays it.
``thread/turns/list`` and ``thread/items/list`` read the log as far as their page needs
(``history``: threads are ``paginated``, so the TUI asks for its last turns and items
only); ``thread/read`` with ``includeTurns`` and ``thread/resume`` without
``excludeTurns`` replay all of it. The ``thread/list`` entries carry each thread's
``thr_`` id as their name, which is what ``codex --remote ADDR resume thr_...`` looks up.
"""

from __future__ import annotations

from typing import Any

from echsd.appserver import history, shapes
from echsd.appserver.connection import Connection, Reply
from echsd.appserver.framing import INVALID_PARAMS, INVALID_REQUEST, Request, RpcError
from echsd.appserver.history import Past
from echsd.appserver.ids import thread_id_of, thread_uuid
from echsd.appserver.stored import scan_back
from echsd.appserver.translate import ThreadTranslator
from echsd.appserver.turns import status_object, usage_breakdown
from echsd.ops.daemon import ListApprovals
from echsd.ops.threads import Compact, Create, Delete, Events, Get, ListThreads, Rename
from echsd.ops.workspace import Fork, Undo

PREVIEW_EVENTS = 16  # the first user message of a thread is among its first few events
PREVIEW_CHARS = 200


def thread_param(params: dict[str, Any], key: str = "threadId") -> str:
    thread_id = thread_id_of(params.get(key))
    if thread_id is None:
        raise RpcError(INVALID_PARAMS, f"{key} must name an echsd thread (its UUID or thr_ id), got {params.get(key)!r}")
    return thread_id


async def preview_of(conn: Connection, thread_id: str) -> str:
    translator = ThreadTranslator(thread_id)
    for envelope in await conn.run_op(Events(thread_id=thread_id, since=0, limit=PREVIEW_EVENTS)):
        translator.feed(envelope)
        if translator.first_user_text is not None:
            return translator.first_user_text[:PREVIEW_CHARS]
    return ""


def _provider(conn: Connection) -> str:
    return conn.settings.provider


async def thread_start(conn: Connection, request: Request) -> Reply:
    params = request.params
    if params.get("ephemeral"):
        raise RpcError(INVALID_REQUEST, "echsd keeps every thread: ephemeral threads are not supported")
    create: dict[str, Any] = {}
    if isinstance(params.get("cwd"), str) and params["cwd"]:
        create["cwd"] = params["cwd"]
    if isinstance(params.get("model"), str) and params["model"]:
        create["model"] = params["model"]
    instructions = [text for text in (params.get("baseInstructions"), params.get("developerInstructions")) if isinstance(text, str) and text.strip()]
    if instructions:
        create["instructions"] = "\n\n".join(instructions)
    approval = shapes.echsd_approval(params.get("approvalPolicy"))
    if approval is not None:
        create["approval"] = approval
    try:
        create.update(shapes.echsd_sandbox(params.get("sandboxPolicy") or params.get("sandbox")) or {})
    except ValueError as exc:
        raise RpcError(INVALID_PARAMS, str(exc)) from None
    created = await conn.run_op(Create(config=create))  # the native wire's checks and limits apply
    thread_id = created["thread_id"]
    conn.started.append(thread_id)
    feed = await conn.attach(thread_id)
    thread = shapes.thread_object(created, provider=_provider(conn), status=feed.translator.status)
    return Reply(shapes.session(thread, created, _provider(conn)), then=[("thread/started", {"thread": thread})])


async def thread_resume(conn: Connection, request: Request) -> Reply:
    thread_id = thread_param(request.params)
    echsd_thread = await conn.run_op(Get(thread_id=thread_id))
    feed = await conn.attach(thread_id)
    turns: list[dict[str, Any]] = []
    if not request.params.get("excludeTurns"):
        async with conn.intake.history():
            turns = [turn.to_turn() for turn in (await (await Past.open(conn, thread_id)).everything()).turns]
    preview = await preview_of(conn, thread_id)
    thread = shapes.thread_object(echsd_thread, provider=_provider(conn), preview=preview, status=feed.translator.status, turns=turns)
    return Reply(shapes.session(thread, echsd_thread, _provider(conn)), then=await usage_so_far(conn, echsd_thread))


async def usage_so_far(conn: Connection, thread: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``thread/tokenUsage/updated`` with the thread's usage so far (and its last turn's),
    for a client that attaches to it; nothing for a thread that has used no tokens."""
    total = usage_breakdown(thread.get("usage") or {})
    if not total["totalTokens"]:
        return []
    thread_id = str(thread["thread_id"])
    found = await scan_back(conn.router, thread_id, int(thread.get("last_seq") or 0) + 1, lambda e: e.get("event") == "turn.usage", 1)
    data = found[0]["data"] if found else {}
    model = str((thread.get("config") or {}).get("model") or "")
    usage = {"total": total, "last": usage_breakdown(data), "modelContextWindow": conn.context_window(model) if model else None}
    return [("thread/tokenUsage/updated", {"threadId": thread_uuid(thread_id), "turnId": str(data.get("turn_id") or ""), "tokenUsage": usage})]


async def thread_read(conn: Connection, request: Request) -> dict[str, Any]:
    """Without ``includeTurns`` only the first events are read (the preview)."""
    thread_id = thread_param(request.params)
    echsd_thread = await conn.run_op(Get(thread_id=thread_id))
    if request.params.get("includeTurns"):
        async with conn.intake.history():
            past = await (await Past.open(conn, thread_id)).everything()
            preview, status, turns = (past.first_user_text or "")[:PREVIEW_CHARS], past.status, [t.to_turn() for t in past.turns]
    else:
        waiting = bool(await conn.run_op(ListApprovals(thread_id=thread_id)))
        preview, status, turns = await preview_of(conn, thread_id), status_object(str(echsd_thread["state"]), waiting), []
    thread = shapes.thread_object(echsd_thread, provider=_provider(conn), preview=preview, status=status, turns=turns)
    return {"thread": thread}


async def thread_turns_list(conn: Connection, request: Request) -> dict[str, Any]:
    async with conn.intake.history():
        return await (await Past.open(conn, thread_param(request.params))).turns_page(request.params)


async def thread_items_list(conn: Connection, request: Request) -> dict[str, Any]:
    async with conn.intake.history():
        return await (await Past.open(conn, thread_param(request.params))).items_page(request.params)


async def thread_list(conn: Connection, request: Request) -> dict[str, Any]:
    params = request.params
    threads = await _listed(conn, params)
    search = params.get("searchTerm")
    previews: dict[str, str] = {}
    if isinstance(search, str) and search.strip():
        needle = search.strip().lower()
        named = [t for t in threads if needle in t["thread_id"] or needle in thread_uuid(t["thread_id"])]
        if named:
            threads = named
        else:
            for thread in threads:
                previews[thread["thread_id"]] = await preview_of(conn, thread["thread_id"])
            threads = [t for t in threads if needle in previews[t["thread_id"]].lower()]
    start, end = _page(len(threads), params)
    data = []
    for thread in threads[start:end]:
        text = previews.get(thread["thread_id"])
        if text is None:
            text = await preview_of(conn, thread["thread_id"])
        data.append(shapes.thread_object(thread, provider=_provider(conn), preview=text))
    return {"data": data, "nextCursor": str(end) if end < len(threads) else None, "backwardsCursor": None}


async def _listed(conn: Connection, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Threads matching the list's filters, in the order asked (newest first by default)."""
    kinds = params.get("sourceKinds") or []
    if params.get("archived") or (kinds and "cli" not in kinds):
        return []  # echsd archives nothing, and its threads are all of the "cli" kind
    threads = await conn.run_op(ListThreads())
    cwd = params.get("cwd")
    if cwd is not None:
        wanted = {cwd} if isinstance(cwd, str) else set(cwd) if isinstance(cwd, list) else set()
        threads = [t for t in threads if t["config"].get("cwd") in wanted]
    parent = params.get("parentThreadId")
    if isinstance(parent, str):
        threads = [t for t in threads if t.get("parent") == thread_id_of(parent)]
    if params.get("sortDirection") != "asc":
        threads.reverse()
    return threads


def _page(total: int, params: dict[str, Any]) -> tuple[int, int]:
    cursor, limit = params.get("cursor"), params.get("limit")
    if cursor is not None and not (isinstance(cursor, str) and cursor.isdigit()):
        raise RpcError(INVALID_PARAMS, f"unknown cursor {cursor!r}: pass back a nextCursor this server returned")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise RpcError(INVALID_PARAMS, "limit must be a non-negative integer")
    start = int(cursor or 0)
    return start, min(total, start + min(limit if limit is not None else history.DEFAULT_LIMIT, history.MAX_LIMIT))


def thread_loaded_list(conn: Connection, request: Request) -> dict[str, Any]:
    return {"data": [thread_uuid(thread_id) for thread_id in conn.feeds], "nextCursor": None}


def thread_unsubscribe(conn: Connection, request: Request) -> dict[str, Any]:
    return {"status": "unsubscribed" if conn.detach(thread_param(request.params)) else "notSubscribed"}


async def thread_compact(conn: Connection, request: Request) -> dict[str, Any]:
    await conn.run_op(Compact(thread_id=thread_param(request.params)))
    return {}


async def thread_delete(conn: Connection, request: Request) -> Reply:
    """``echs rm``: the thread and its descendants go (refused while one of them runs)."""
    deleted = (await conn.run_op(Delete(thread_id=thread_param(request.params))))["deleted"]
    for thread_id in deleted:
        conn.detach(thread_id)
    return Reply({}, then=[("thread/deleted", {"threadId": thread_uuid(thread_id)}) for thread_id in deleted])


async def thread_name_set(conn: Connection, request: Request) -> Reply:
    """``thread.rename``; its watchers on this connection hear ``thread/name/updated``."""
    thread_id = thread_param(request.params)
    name = request.params.get("name")
    if not isinstance(name, str):
        raise RpcError(INVALID_PARAMS, "name must be a string")
    renamed = await conn.run_op(Rename(thread_id=thread_id, name=name))  # the wire's checks: one line, 256 characters
    return Reply({}, then=[("thread/name/updated", {"threadId": thread_uuid(thread_id), "threadName": renamed["name"]})])


async def thread_fork(conn: Connection, request: Request) -> Reply:
    """``thread/fork``: ``echs fork`` (the turns through ``lastTurnId``, or before
    ``beforeTurnId``, else every finished turn); answered like ``thread/start``."""
    params = request.params
    source = thread_param(params)
    last, before = params.get("lastTurnId"), params.get("beforeTurnId")
    if last is not None and before is not None:
        raise RpcError(INVALID_PARAMS, "beforeTurnId cannot be combined with lastTurnId")
    fork: dict[str, Any] = {"thread_id": source}
    if isinstance(last, str) and last:
        fork["turn_id"] = last
    elif isinstance(before, str) and before:
        fork["turn_id"], fork["at_turn"] = await _turn_before(conn, source, before)
    created = await conn.run_op(Fork(**fork))
    thread_id = created["thread_id"]
    feed = await conn.attach(thread_id)
    turns = [] if params.get("excludeTurns") else [turn.to_turn() for turn in (await (await Past.open(conn, thread_id)).everything()).turns]
    thread = shapes.thread_object(created, provider=_provider(conn), preview=await preview_of(conn, thread_id), status=feed.translator.status, turns=turns)
    return Reply(shapes.session(thread, created, _provider(conn)), then=[("thread/started", {"thread": thread})])


async def _turn_before(conn: Connection, thread_id: str, turn_id: str) -> tuple[str | None, int | None]:
    """The turn before ``turn_id`` (its id), or none at all (at_turn 0: an empty history)."""
    turns = [turn.id for turn in (await (await Past.open(conn, thread_id)).everything()).turns]
    if turn_id not in turns:
        raise RpcError(INVALID_PARAMS, f"no turn {turn_id!r} in this thread")
    index = turns.index(turn_id)
    return (turns[index - 1], None) if index > 0 else (None, 0)


async def thread_revert(conn: Connection, request: Request) -> dict[str, Any]:
    """``thread/revert``: ``echs undo`` of ``beforeTurnId`` and every later turn (their
    files are put back too, where a git snapshot has them)."""
    thread_id = thread_param(request.params)
    before = request.params.get("beforeTurnId")
    if not isinstance(before, str) or not before:
        raise RpcError(INVALID_PARAMS, "beforeTurnId must name a turn of the thread")
    await conn.run_op(Undo(thread_id=thread_id, turn_id=before))
    return {"thread": await _thread_now(conn, thread_id, []), "itemsBackwardsCursor": None, "turnsBackwardsCursor": None}


async def thread_rollback(conn: Connection, request: Request) -> dict[str, Any]:
    """``thread/rollback`` (earlier protocol versions): ``echs undo --turns numTurns``."""
    thread_id = thread_param(request.params)
    count = request.params.get("numTurns")
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise RpcError(INVALID_PARAMS, "numTurns must be a positive integer")
    await conn.run_op(Undo(thread_id=thread_id, turns=count))
    turns = [turn.to_turn() for turn in (await (await Past.open(conn, thread_id)).everything()).turns]
    return {"thread": await _thread_now(conn, thread_id, turns)}


async def _thread_now(conn: Connection, thread_id: str, turns: list[dict[str, Any]]) -> dict[str, Any]:
    echsd_thread = await conn.run_op(Get(thread_id=thread_id))
    return shapes.thread_object(echsd_thread, provider=_provider(conn), preview=await preview_of(conn, thread_id), turns=turns)


async def thread_goal_get(conn: Connection, request: Request) -> dict[str, Any]:
    await conn.run_op(Get(thread_id=thread_param(request.params)))
    return {"goal": None}  # echsd threads have no goals


METHODS = {
    "thread/start": thread_start,
    "thread/resume": thread_resume,
    "thread/read": thread_read,
    "thread/list": thread_list,
    "thread/loaded/list": thread_loaded_list,
    "thread/turns/list": thread_turns_list,
    "thread/items/list": thread_items_list,
    "thread/unsubscribe": thread_unsubscribe,
    "thread/compact/start": thread_compact,
    "thread/goal/get": thread_goal_get,
    "thread/name/set": thread_name_set,
    "thread/delete": thread_delete,
    "thread/fork": thread_fork,
    "thread/revert": thread_revert,
    "thread/rollback": thread_rollback,
}
