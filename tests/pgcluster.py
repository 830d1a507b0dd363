"""A throwaway PostgreSQL cluster in a temp dir (initdb + pg_ctl), for tests and benchmarks.

It listens on a unix socket in its own directory only (no TCP port to collide on), trusts
every local connection, and, unless ``durable``, trades crash safety for speed (fsync off):
fit for tests, never for a daemon's real store. Run as root (as CI is), the server runs as
the ``postgres`` user, since PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import quote

PG_BIN = Path(os.environ.get("ECHS_PG_BIN", "/usr/lib/postgresql/15/bin"))
SUPERUSER = "postgres"
ADMIN_DB = "postgres"
TEST_DB_PREFIX = "echs_"
FAST_SETTINGS = ("fsync=off", "full_page_writes=off", "synchronous_commit=off")
TIMEOUT_S = 60


def missing_reason() -> str | None:
    """Why no cluster can be started here, or None when it can."""
    for tool in ("initdb", "pg_ctl", "postgres"):
        if not (PG_BIN / tool).exists():
            return f"PostgreSQL binaries not found ({PG_BIN / tool}; install Debian's postgresql-15 or set ECHS_PG_BIN)"
    if os.geteuid() == 0 and _server_user() is None:
        return "running as root and there is no 'postgres' user to run the server as"
    return None


def _server_user() -> pwd.struct_passwd | None:
    """Who runs the server: ourselves, or the ``postgres`` user when we are root."""
    if os.geteuid() != 0:
        return pwd.getpwuid(os.geteuid())
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        return None


class TempCluster:
    """``start()``, then ``url(dbname)`` / ``create_database``; ``stop()`` removes it all."""

    def __init__(self, *, durable: bool = False) -> None:
        self.durable = durable
        self.root = Path(tempfile.mkdtemp(prefix="echs-pg-"))
        self.data = self.root / "data"
        self._user = _server_user()
        self._running = False
        self._options = ""

    @property
    def socket_dir(self) -> Path:
        return self.root

    def start(self) -> TempCluster:
        reason = missing_reason()
        if reason:
            raise RuntimeError(reason)
        assert self._user is not None
        os.chown(self.root, self._user.pw_uid, self._user.pw_gid)
        self._pg(
            "initdb", "-D", str(self.data), "-U", SUPERUSER, "-A", "trust", "-E", "UTF8",
            "--locale=C.UTF-8", "--no-sync",
        )
        settings = [
            "listen_addresses=''",
            f"unix_socket_directories='{self.root}'",
            "max_connections=300",
            *(() if self.durable else FAST_SETTINGS),
        ]
        self._options = " ".join(f"-c {setting}" for setting in settings)
        self._start_server()
        return self

    def _start_server(self) -> None:
        log = self.root / "server.log"
        self._pg("pg_ctl", "-D", str(self.data), "-l", str(log), "-o", self._options, "-w", "-t", str(TIMEOUT_S), "start")
        self._running = True

    def take_down(self) -> None:
        """Stop the server as an outage would (``-m fast``: every connection is cut), keeping
        its data for ``bring_back``."""
        if self._running:
            self._running = False
            self._pg("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def bring_back(self) -> None:
        """Start the server again after ``take_down``, on the same socket and data."""
        if not self._running:
            self._start_server()

    def stop(self) -> None:
        """Stop the server at once (its data is thrown away) and remove the directory."""
        if self._running:
            self._running = False
            self._pg("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, dbname: str) -> str:
        return database_url(self.socket_dir, dbname)

    def create_database(self, name: str) -> str:
        return create_database(self.socket_dir, name)

    def drop_database(self, name: str) -> None:
        drop_database(self.socket_dir, name)

    def drop_idle_databases(self, prefix: str = TEST_DB_PREFIX) -> None:
        drop_idle_databases(self.socket_dir, prefix)

    def _pg(self, tool: str, *args: str) -> None:
        assert self._user is not None
        as_other = self._user.pw_uid != os.geteuid()
        result = subprocess.run(
            [str(PG_BIN / tool), *args],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            cwd=self.root,
            user=self._user.pw_uid if as_other else None,
            group=self._user.pw_gid if as_other else None,
            extra_groups=[] if as_other else None,
        )
        if result.returncode != 0:
            raise RuntimeError(f"{tool} failed ({result.returncode}): {result.stderr.strip() or result.stdout.strip()}")


def database_for(key: str) -> str:
    """A database name for ``key`` (e.g. a test's state dir): stable, valid, ours."""
    return TEST_DB_PREFIX + hashlib.sha256(key.encode()).hexdigest()[:20]


def database_url(socket_dir: Path, dbname: str) -> str:
    return f"postgresql://{SUPERUSER}@/{dbname}?host={quote(str(socket_dir), safe='')}"


def create_database(socket_dir: Path, name: str) -> str:
    """Create ``name`` in the cluster at ``socket_dir`` unless it exists; its URL."""
    import psycopg
    from psycopg import errors

    with psycopg.connect(database_url(socket_dir, ADMIN_DB), autocommit=True) as admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            try:
                admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 STRATEGY FILE_COPY')
            except errors.DuplicateDatabase:  # another process of the same test won
                pass
    return database_url(socket_dir, name)


def drop_database(socket_dir: Path, name: str) -> None:
    """Drop ``name``, closing whatever is still connected to it."""
    import psycopg

    with psycopg.connect(database_url(socket_dir, ADMIN_DB), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def drop_idle_databases(socket_dir: Path, prefix: str = TEST_DB_PREFIX) -> None:
    """Drop every database named ``prefix...`` that nobody is connected to (one still in
    use, e.g. by a daemon a module-scoped fixture keeps running, stays)."""
    import psycopg
    from psycopg import errors

    with psycopg.connect(database_url(socket_dir, ADMIN_DB), autocommit=True) as admin:
        rows = admin.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", (prefix + "%",))
        for name in [r[0] for r in rows]:
            try:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
            except errors.ObjectInUse:
                continue
