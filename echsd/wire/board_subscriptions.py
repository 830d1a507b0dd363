"""A connection's blackboard subscriptions (``subscribe {blackboard: PREFIX, since?}``):
subscriptions that belong to no thread.

The seam rules live in ``board_follow.BoardFollow`` (sans-IO); this module does the IO
around them, as ``subscriptions`` does for threads: listen to the blackboard *before*
reading its log, page through the log from the cursor (only when the outbox has room, so a
replay never overflows it), then hand the held live changes over. The blackboard's
callback only appends to the outbox. A range the log no longer holds (retention) is sent as
an ``events.gap`` with reason ``retention``; a client that falls behind gets one with
reason ``backpressure`` (``Outbox``) and subscribes again from its last seq.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from echsd.blackboard.board import Blackboard, Listening
from echsd.blackboard.entries import change_envelope, check_key
from echsd.errors import BadRequest
from echsd.events import BoardStream, gap_envelope
from echsd.logs import get_logger
from echsd.store.rows import BlackboardChange
from echsd.wire.board_follow import BoardFollow
from echsd.wire.outbox import Outbox

PAGE = 500
log = get_logger(__name__)


class BoardSubscriptions:
    def __init__(
        self,
        board: Blackboard,
        outbox: Outbox,
        wake_writer: Callable[[], None],
        wait_room: Callable[[int, int], Awaitable[None]],
    ) -> None:
        self.board, self.outbox = board, outbox
        self._wake_writer = wake_writer
        self._wait_room = wait_room
        self.follow = BoardFollow(max_held=outbox.max_events)
        self._page = max(1, min(PAGE, outbox.max_events // 2))
        self._listening: Listening | None = None

    def _on_change(self, change: BlackboardChange) -> None:
        """The blackboard's callback: never blocks and never raises."""
        prefixes = self.follow.on_live(change)
        for prefix in prefixes:
            self._push(prefix, change)
        if prefixes:
            self._wake_writer()

    def _push(self, prefix: str, change: BlackboardChange) -> None:
        stream = BoardStream(prefix)
        try:
            data = self.outbox.encoding.envelope(change_envelope(change, prefix))
        except Exception:
            log.exception("cannot encode a blackboard change; reporting it as a gap", seq=change.seq)
            self.outbox.drop(stream, change.seq, change.seq, change.entry.updated_at)
        else:
            self.outbox.push_event(stream, change.seq, change.seq, change.entry.updated_at, data)

    async def subscribe(self, prefix: Any, since: int | None) -> dict[str, Any]:
        prefix = check_key(prefix, what="prefix")
        last = self.board.last_seq
        if since is not None and since > last:
            raise BadRequest(f"since {since} is beyond the blackboard's last seq ({last}); subscribe with since <= {last}")
        if self._listening is None:
            self._listening = self.board.listen(self._on_change)
        self.outbox.forget(BoardStream(prefix))
        # Live only: start after the last committed change (no checkpoint since reading it).
        self.follow.begin(prefix, last if since is None else since)
        replayed = 0
        try:
            while True:
                if since is not None:
                    replayed += await self._replay(prefix)
                held, again = self.follow.finish()
                if not again:
                    break
        except BaseException:
            self.follow.abort()
            self._stop(prefix)
            raise
        # No checkpoint from here to the response: the held changes go out before it.
        for change in held:
            self._push(prefix, change)
        self._wake_writer()
        replayed += len(held)
        return {"thread_id": None, "blackboard": prefix, "since": since, "replayed": replayed, "last_seq": self.follow.position(prefix)}

    async def _replay(self, prefix: str) -> int:
        """Send the logged changes under ``prefix`` above its cursor; the number sent."""
        sent = 0
        stream = BoardStream(prefix)
        encode = self.outbox.encoding.envelope
        while True:
            cursor = self.follow.position(prefix)
            first, changes = await self.board.read_log(cursor, prefix, self._page)
            parts: list[bytes] = []
            if first > cursor + 1 and self.follow.replayed(prefix, first - 1):
                parts.append(encode(gap_envelope(stream, cursor + 1, first - 1, "retention")))
            parts.extend(encode(change_envelope(c, prefix)) for c in changes if self.follow.replayed(prefix, c.seq))
            if parts:
                data = b"".join(parts)
                await self._wait_room(len(parts), len(data))
                ts = changes[-1].entry.updated_at if changes else 0.0
                self.outbox.push_event(stream, cursor + 1, self.follow.position(prefix), ts, data, len(parts))
                self._wake_writer()
                sent += len(parts)
            if len(changes) < self._page:
                return sent

    def unsubscribe(self, prefix: Any) -> dict[str, Any]:
        prefix = check_key(prefix, what="prefix")
        self._stop(prefix)
        return {"thread_id": None, "blackboard": prefix, "subscribed": False}

    def _stop(self, prefix: str) -> None:
        self.follow.stop(prefix)
        if not self.follow and self._listening is not None:
            self._listening.close()
            self._listening = None

    def close(self) -> None:
        """Stop listening (the connection is gone)."""
        if self._listening is not None:
            self._listening.close()
            self._listening = None
