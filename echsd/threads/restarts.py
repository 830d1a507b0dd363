"""One thread's worker, kept running (the supervisor starts it: ``ensure_actor``).

An exception escaping the worker is logged with its traceback and a fresh worker starts
from the store; more than ``restart_limit`` crashes within ``restart_window_s`` and the
thread is given up for ``restart_cooldown_s``: ``thread.given_up`` is logged and requests
answer ``unavailable`` until the next request after the cool-down (``ensure_actor``). A
worker that stopped because the database is out of reach (``StoreUnavailable``) did not
crash: it starts again after a backoff, and meanwhile requests answer ``unavailable``.
"""

from __future__ import annotations

import time
from collections import deque

import trio

from echsd.events import ThreadGivenUp
from echsd.logs import get_logger
from echsd.settings import Tuning
from echsd.store.errors import StoreUnavailable
from echsd.threads.actor import ThreadActor
from echsd.threads.mailbox import error_reply, first_leaf
from echsd.threads.record import GivenUp, ThreadRecord
from echsd.threads.services import ActorServices

log = get_logger(__name__)
STORE_AWAY_FIRST_S = 0.5  # a worker that found the database away waits this long, doubling up to STORE_AWAY_MAX_S
STORE_AWAY_MAX_S = 5.0


async def keep_worker(record: ThreadRecord, services: ActorServices, tuning: Tuning) -> None:
    """Run the thread's worker until it ends; start a fresh one after a crash or an outage."""
    crashes: deque[float] = deque()
    crashed: BaseException | None = None
    away = STORE_AWAY_FIRST_S
    while True:  # one worker per pass; a crash restarts it (a give-up after a cool-down)
        try:
            await ThreadActor(record, services).run(crashed)
            record.actor_started = False
            return
        except Exception as exc:
            root = first_leaf(exc)
            if isinstance(root, StoreUnavailable):  # no crash: wait for the database, then start again
                log.warning("thread worker waits for the database", thread_id=record.thread_id, error=root.message, retry_s=away)
                await _refuse_while_store_away(record, root, away)
                away = min(away * 2, STORE_AWAY_MAX_S)
                crashed = root
                continue
            away = STORE_AWAY_FIRST_S
            log.error("thread worker crashed", thread_id=record.thread_id, exc_info=root)
            now = time.monotonic()
            crashes.append(now)
            while crashes and now - crashes[0] > tuning.restart_window_s:
                crashes.popleft()
            if len(crashes) > tuning.restart_limit:
                reason = f"worker crashed {len(crashes)} times in {tuning.restart_window_s:g} s: {root!r}"
                record.failed = given_up = GivenUp(reason, now + tuning.restart_cooldown_s)
                log.error("giving up on thread worker", thread_id=record.thread_id, reason=reason, cooldown_s=tuning.restart_cooldown_s)
                await _announce_give_up(record, reason, tuning)
                await _refuse_while_given_up(record, given_up)
                crashes.clear()
            crashed = root


async def _announce_give_up(record: ThreadRecord, reason: str, tuning: Tuning) -> None:
    """``thread.given_up`` on the thread's log (hooks and watchers learn of it); a store
    that cannot take it (the reason, maybe) is logged, never raised."""
    try:
        with trio.move_on_after(tuning.restart_cooldown_s):
            await record.log.ready()
            record.log.emit_one(ThreadGivenUp, {"reason": reason, "retry_in_s": tuning.restart_cooldown_s})
    except Exception:
        log.exception("cannot log a thread's give-up", thread_id=record.thread_id)


async def _refuse_while_store_away(record: ThreadRecord, error: StoreUnavailable, seconds: float) -> None:
    """For ``seconds``, answer what reaches the mailbox with the database's absence."""
    with trio.move_on_after(seconds):
        async for request in record.mailbox_receive:
            error_reply(request.reply, error)


async def _refuse_while_given_up(record: ThreadRecord, given_up: GivenUp) -> None:
    """Answer what reaches the mailbox until ``ensure_actor`` ends the give-up."""
    with given_up.refusing:
        async for request in record.mailbox_receive:
            error_reply(request.reply, given_up.refusal(record.thread_id))
