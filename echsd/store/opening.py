"""``open_store``: the store at a path or URL, SQLite or PostgreSQL (the backends subclass
``Store``, so choosing one lives here, not in ``store.py``). Each backend is imported when
it is opened: a daemon on SQLite never loads the PostgreSQL driver."""

from __future__ import annotations

import os
from pathlib import Path

from echsd.store.errors import StoreError
from echsd.store.store import DEFAULT_MAX_PENDING, DEFAULT_READERS, POSTGRES_SCHEMES, SQLITE_SCHEME, Store, sqlite_path


def open_store(
    target: str | os.PathLike[str],
    *,
    node_id: str = "",
    readers: int = DEFAULT_READERS,
    max_pending: int = DEFAULT_MAX_PENDING,
) -> Store:
    """Open (creating if needed) and migrate the store at ``target``.

    ``target`` is a path (an SQLite file), ``sqlite:///PATH`` or ``postgresql://...``
    (``postgres://`` too).
    Raises ``StoreError`` with a one-line message naming the database when it cannot
    be reached or opened, is not ours, or was written by a newer echsd.
    """
    kwargs = {"node_id": node_id, "readers": readers, "max_pending": max_pending}
    if isinstance(target, os.PathLike) or "://" not in target or target.startswith(SQLITE_SCHEME):
        from echsd.store.sqlite.store import SqliteStore

        path = Path(target) if isinstance(target, os.PathLike) or "://" not in target else sqlite_path(target)
        return SqliteStore.open_file(path, **kwargs)  # type: ignore[arg-type]
    if target.startswith(POSTGRES_SCHEMES):
        from echsd.store.postgres.store import PgStore

        return PgStore.connect(target, **kwargs)  # type: ignore[arg-type]
    raise StoreError(f"unsupported store {target.split('://', 1)[0]!r}: expected sqlite:///PATH or postgresql://...")
