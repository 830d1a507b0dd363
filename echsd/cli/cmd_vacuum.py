"""``echsd vacuum``: give the space of deleted threads and folded events back to the disk.

SQLite keeps freed pages inside the file; ``VACUUM`` rewrites the database without them
(and a TRUNCATE checkpoint empties the WAL). It needs the database to itself, so it runs
only while the daemon is stopped: the daemon's socket lock (``<socket>.lock``, held for
the daemon's life) is taken for the duration, which both proves no daemon runs on this
state dir and keeps one from starting meanwhile. PostgreSQL reclaims space by itself
(autovacuum), so there is nothing to do there.
"""

from __future__ import annotations

import fcntl
import os
from contextlib import ExitStack
from pathlib import Path
from typing import Any, NoReturn

import click

from echsd.cli.options import settings_from_flags, store_options
from echsd.settings import SQLITE_SCHEME, Settings


def _fail(message: str, code: int = 1) -> NoReturn:
    click.echo(f"echsd vacuum: {message}", err=True)
    raise SystemExit(code)


@click.command()
@store_options
def vacuum(**flags: Any) -> None:
    """Compact the SQLite store (daemon stopped).

    Gives the space of deleted threads and folded events back to the disk.
    """
    settings = settings_from_flags(**flags)
    if not settings.store_url.startswith(SQLITE_SCHEME):
        click.echo("echsd vacuum: the store is PostgreSQL, whose autovacuum reclaims space by itself; nothing to do", err=True)
        return
    path = Path(settings.store_url[len(SQLITE_SCHEME) + 1 :])  # sqlite:////abs/path
    if not path.exists():
        _fail(f"no database at {path} (has `echsd serve` run with this state dir?)")
    with ExitStack() as locks:
        for lock in _socket_locks(settings):
            locks.enter_context(_held(lock))
        before = _size(path)
        _vacuum(path)
        after = _size(path)
    click.echo(f"vacuumed {path}: {_mib(before)} -> {_mib(after)}")


def _socket_locks(settings: Settings) -> list[Path]:
    """The lock file beside each unix socket the daemon would listen on."""
    return [Path(f"{address.path}.lock") for address in settings.listen if address.kind == "unix" and address.path is not None]


class _held:
    """An exclusive flock on ``path``; refuses (exit 1) when a running daemon holds it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> None:
        if not self.path.parent.is_dir():
            return  # no socket directory: no daemon has listened there
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            _fail(f"the daemon is running (it holds {self.path}); stop it first, e.g. `systemctl --user stop echsd`")

    def __exit__(self, *exc: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)


def _vacuum(path: Path) -> None:
    import apsw

    from echsd.store.schema import APPLICATION_ID

    try:
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
    except apsw.Error as exc:
        _fail(f"cannot open {path}: {exc}")
    try:
        conn.set_busy_timeout(5000)
        (app_id,) = conn.execute("PRAGMA application_id").fetchone()
        if app_id != APPLICATION_ID:
            _fail(f"{path} is not an echsd database (application_id {app_id:#x})")
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except apsw.BusyError:
        _fail(f"{path} is in use by another process (another daemon sharing this store?); stop it first")
    except apsw.Error as exc:
        _fail(f"cannot vacuum {path}: {exc}")
    finally:
        conn.close()


def _size(path: Path) -> int:
    """The database and its WAL, in bytes."""
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB"
