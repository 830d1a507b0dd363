"""``PgStore``: a PostgreSQL database, its writer connection and a pool of readers."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
import trio

from echsd.logs import get_logger, register_secret
from echsd.store.conn import Conn
from echsd.store.errors import StoreError
from echsd.store.postgres.connection import PgConn
from echsd.store.postgres.schema import migrate
from echsd.store.store import DEFAULT_MAX_PENDING, DEFAULT_READERS, Store, first_line

log = get_logger("echsd.store")


class PgStore(Store):
    """Several daemons over one database; this one is ``node_id``.

    Its connections announce themselves as ``echsd <node_id>`` (``application_name``), so
    ``pg_stat_activity`` tells an operator which node holds which connection.
    """

    dialect = "postgresql"

    def __init__(self, url: str, conn: PgConn, *, node_id: str, readers: int, max_pending: int) -> None:
        super().__init__(redact(url), conn, node_id=node_id, readers=readers, max_pending=max_pending)
        self._url = url
        self._application_name = application_name(node_id)

    @property
    def url(self) -> str:
        """The connection URL, password included: for this node's own extra connections."""
        return self._url

    @classmethod
    def connect(
        cls,
        url: str,
        *,
        node_id: str = "",
        readers: int = DEFAULT_READERS,
        max_pending: int = DEFAULT_MAX_PENDING,
    ) -> PgStore:
        """Connect to ``url`` and migrate; ``StoreError`` (one line) when that fails."""
        where = redact(url)
        for secret in passwords(url):
            register_secret(secret)
        conn: PgConn | None = None
        try:
            conn = PgConn(url, application_name(node_id))
            version = migrate(conn, where)
        except psycopg.Error as exc:
            if conn is not None:
                conn.close()
            raise StoreError(f"cannot use the PostgreSQL store {where}: {first_line(exc)}") from exc
        except BaseException:
            if conn is not None:
                conn.close()
            raise
        log.info("store_opened", store=where, schema_version=version, node_id=node_id)
        return cls(url, conn, node_id=node_id, readers=readers, max_pending=max_pending)

    async def run_background(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Nothing runs in the background yet: the server checkpoints by itself."""
        task_status.started()

    def _connect_reader(self) -> Conn:
        return PgConn(self._url, self._application_name)

    def _close_writer(self, conn: Conn) -> None:
        conn.close()

    def _driver_error(self, exc: BaseException) -> bool:
        return isinstance(exc, psycopg.Error)

    def _unreachable(self, exc: BaseException) -> bool:
        return isinstance(exc, psycopg.OperationalError)


def application_name(node_id: str) -> str:
    return f"echsd {node_id}".strip()[:63]  # PostgreSQL keeps 63 bytes


def passwords(url: str) -> list[str]:
    """The passwords ``url`` carries (never to be logged)."""
    parts = urlsplit(url)
    found = [value for key, value in parse_qsl(parts.query) if key == "password"]
    return [p for p in (parts.password, *found) if p]


def redact(url: str) -> str:
    """``url`` without its password (in the user part or the query), for messages and logs."""
    parts = urlsplit(url)
    if parts.password is not None:
        user, host = parts.netloc.rsplit("@", 1)
        parts = parts._replace(netloc=f"{user.split(':', 1)[0]}:***@{host}")
    query = parse_qsl(parts.query, keep_blank_values=True)
    if any(key == "password" for key, _ in query):
        hidden = [(key, "***" if key == "password" else value) for key, value in query]
        parts = parts._replace(query=urlencode(hidden, safe="/*"))
    return urlunsplit(parts)
