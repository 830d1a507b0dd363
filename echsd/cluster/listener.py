"""``Listener``: one PostgreSQL connection LISTENing on the cluster's channels, read on trio.

No worker thread sits in a blocking wait: the trio task waits for the connection's socket
to become readable (``trio.lowlevel.wait_readable``), then lets libpq consume the input and
hands every notification to the callback of its channel. A lost connection is reopened
with backoff; since notifications sent meanwhile are gone, ``on_reconnect`` lets each
consumer catch up from the database (which holds everything a notification only points to).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import psycopg
import trio

from echsd.logs import get_logger
from echsd.store.postgres.connection import connect

log = get_logger(__name__)

Handler = Callable[[str], None]
RETRY_MAX_S = 2.0


class Listener:
    def __init__(self, url: str, application_name: str, handlers: Mapping[str, Handler], on_reconnect: Callable[[], None]) -> None:
        self._url = url
        self._application_name = application_name
        self._handlers = dict(handlers)
        self._on_reconnect = on_reconnect
        self.connected = trio.Event()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        delay = 0.05
        first = True
        while True:
            try:
                conn = await trio.to_thread.run_sync(self._open)
            except psycopg.Error as exc:
                log.warning("cluster_listen_failed", error=str(exc).splitlines()[0] if str(exc) else repr(exc), retry_s=delay)
                await trio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)
                continue
            delay = 0.05
            if first:
                first = False
                self.connected.set()
                task_status.started()
            else:
                log.info("cluster_listen_reconnected")
                self._on_reconnect()
            try:
                await self._drain(conn)
            except psycopg.Error as exc:
                log.warning("cluster_listen_lost", error=repr(exc))
            finally:
                conn.close()

    def _open(self) -> psycopg.Connection[Any]:
        conn = connect(self._url, self._application_name)
        conn.add_notify_handler(self._dispatch)  # those that arrive while psycopg runs a query
        for channel in self._handlers:
            conn.execute(f'LISTEN "{channel}"')
        return conn

    async def _drain(self, conn: psycopg.Connection[Any]) -> None:
        pgconn = conn.pgconn
        while True:
            await trio.lowlevel.wait_readable(conn.fileno())
            pgconn.consume_input()  # raises OperationalError when the connection is gone
            if pgconn.status != psycopg.pq.ConnStatus.OK:
                raise psycopg.OperationalError("the LISTEN connection is closed")
            while (notice := pgconn.notifies()) is not None:
                self._dispatch(psycopg.Notify(notice.relname.decode(), notice.extra.decode(), notice.be_pid))

    def _dispatch(self, notice: psycopg.Notify) -> None:
        handler = self._handlers.get(notice.channel)
        if handler is None:
            return
        try:
            handler(notice.payload)
        except Exception:
            log.exception("cluster_notice_failed", channel=notice.channel)
