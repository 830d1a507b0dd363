"""Where the daemon keeps its data: ``--store`` (SQLite file or PostgreSQL URL) and ``--node-id``.

A PostgreSQL URL may carry a password, and a command line is readable by every local user
(``/proc/PID/cmdline``, ``ps``). So the URL can also come from the environment
(``ECHS_STORE``, readable only by the daemon's user) or from a file (``--store-file``,
refused when group or others have any access to it, as libpq treats its passfile); libpq's
own passfile (``~/.pgpass``, ``PGPASSFILE``) keeps the password out of the URL altogether.
A password given with ``--store`` still works, with a warning at start that never shows it.
"""

from __future__ import annotations

import os
import re
import socket
import stat
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from echsd.settings.errors import SettingsError
from echsd.settings.sources import Given, Sources

SQLITE_SCHEME = "sqlite://"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
NODE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
MAX_STORE_FILE_BYTES = 64 * 1024
PASSWORD_ON_COMMAND_LINE = (
    "the database password is on the command line (--store), where every local user can read it "
    "(ps, /proc/PID/cmdline); pass the URL in ECHS_STORE or in a private file (--store-file), or keep "
    "the password in libpq's passfile (~/.pgpass)"
)


def store_setting(sources: Sources, state_dir: Path) -> tuple[str, tuple[str, ...]]:
    """The store URL and the warnings it earns. At each level (flags, environment, config
    file) a URL or a file holding one may be given, not both: ``--store`` / ``--store-file``,
    ``ECHS_STORE`` / ``ECHS_STORE_FILE``, ``store`` / ``store_file``."""
    levels = (
        (sources.flags, "store", "store_file", "--store", "--store-file", "from {}"),
        (sources.env, "ECHS_STORE", "ECHS_STORE_FILE", "ECHS_STORE", "ECHS_STORE_FILE", "from {}"),
        (sources.file, "store", "store_file", "store", "store_file", f"in {sources.config_path}"),
    )
    for values, url_key, file_key, url_name, file_name, where in levels:
        url, path = values.get(url_key), values.get(file_key)
        if url and path:
            raise SettingsError(f"give {url_name} or {file_name}, not both")
        if url:
            given = Given(url, where.format(url_name), typed=values is sources.file)
            if not isinstance(url, str):
                raise given.invalid("store", "a URL (sqlite:///PATH or postgresql://...)")
            parsed = parse_store(url, state_dir)
            on_command_line = values is sources.flags and url_password(parsed) is not None
            return parsed, (PASSWORD_ON_COMMAND_LINE,) if on_command_line else ()
        if path:
            given = Given(path, where.format(file_name), typed=values is sources.file)
            if not isinstance(path, str):
                raise given.invalid("store_file", "a path")
            return parse_store(read_store_file(path, given.where), state_dir), ()
    return parse_store(f"{SQLITE_SCHEME}/{state_dir / 'echsd.db'}", state_dir), ()


def read_store_file(path: str, where: str) -> str:
    """The store URL in the file at ``path``: its first line that is neither blank nor a
    ``#`` comment. Refused unless the file is regular and private (no group or other access,
    as libpq requires of its passfile), so the password in it stays the owner's."""
    location = Path(path).expanduser()
    try:
        with open(location, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise SettingsError(f"invalid setting 'store_file' {where}: {path} is not a regular file")
            if info.st_mode & 0o077:
                raise SettingsError(
                    f"refusing the store file {path} ({where}): group or others may access it (mode "
                    f"{stat.S_IMODE(info.st_mode):04o}); make it private with `chmod 600 {path}`"
                )
            data = handle.read(MAX_STORE_FILE_BYTES + 1)
    except OSError as exc:
        raise SettingsError(f"cannot read the store file {path} ({where}): {exc.strerror or exc}") from None
    if len(data) > MAX_STORE_FILE_BYTES:
        raise SettingsError(f"invalid setting 'store_file' {where}: {path} is larger than {MAX_STORE_FILE_BYTES // 1024} KiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SettingsError(f"invalid setting 'store_file' {where}: {path} is not UTF-8 text") from None
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return line.strip()
    raise SettingsError(f"invalid setting 'store_file' {where}: {path} holds no URL")


def url_password(url: str) -> str | None:
    """The password a PostgreSQL URL carries (``user:PASSWORD@`` or ``?password=``), if any."""
    if not url.startswith(POSTGRES_SCHEMES):
        return None
    parts = urlsplit(url)
    if parts.password:
        return parts.password
    values = parse_qs(parts.query).get("password")
    return values[0] if values and values[0] else None


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
