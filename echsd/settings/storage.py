"""Where the daemon keeps its data: ``--store`` (SQLite file or PostgreSQL URL) and ``--node-id``."""

from __future__ import annotations

import re
import socket
from pathlib import Path
from urllib.parse import urlsplit

from echsd.settings.errors import SettingsError

SQLITE_SCHEME = "sqlite://"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
NODE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


def parse_store(url: str, state_dir: Path) -> str:
    """Validate ``--store`` and make an SQLite path absolute (relative to the state dir).

    ``sqlite:///PATH``: PATH is relative (``sqlite:///echsd.db``) or absolute
    (``sqlite:////var/lib/echsd.db``), ``~`` expands. ``postgresql://...`` (or
    ``postgres://``) is a libpq URL, checked here only for shape: reaching it is the store's
    job, at start-up.
    """
    url = url.strip()
    if url.startswith(SQLITE_SCHEME):
        path = url[len(SQLITE_SCHEME) :]
        if not path.startswith("/") or path in ("/", "/:memory:"):
            raise SettingsError(f"invalid setting 'store': {url!r}: expected sqlite:///PATH (a database file)")
        location = Path(path[1:]).expanduser()
        return SQLITE_SCHEME + "/" + str(location if location.is_absolute() else state_dir / location)
    if url.startswith(POSTGRES_SCHEMES):
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 -- raises ValueError for a port that is not a number
        except ValueError as exc:
            raise SettingsError(f"invalid setting 'store': not a valid postgresql:// URL ({exc})") from None
        if parts.fragment:
            raise SettingsError("invalid setting 'store': a postgresql:// URL has no #fragment")
        return url
    scheme = url.split("://", 1)[0] if "://" in url else url
    raise SettingsError(f"invalid setting 'store': {scheme!r} is not sqlite:///PATH or postgresql://...")


def parse_node_id(value: str) -> str:
    if not NODE_ID.fullmatch(value):
        raise SettingsError(
            f"invalid setting 'node_id': {value!r}: use 1-63 letters, digits, '.', '_' or '-'"
        )
    return value


def default_node_id() -> str:
    """The host name, made a valid node id (a default must never refuse to start)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname()).lstrip("._-")[:63]
    return name or "localhost"
