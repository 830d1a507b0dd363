"""The real filesystem as a ``FileView``: paths resolved against a cwd, atomic writes.

A write goes to a temporary file in the target's directory and is renamed over it, so a
crash never leaves a half-written file; the file keeps its permission bits, and writing
through a symlink changes the file it points to, not the link. Blocking calls: run them
off the event loop.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

TEMP_SUFFIX = ".apply_patch.tmp"


@dataclass(frozen=True)
class _Saved:
    data: bytes
    mode: int


class DiskView:
    def __init__(self, cwd: Path | str) -> None:
        self.cwd = os.fspath(cwd)

    def resolve(self, path: str) -> str:
        return os.path.normpath(os.path.join(self.cwd, path))

    def read_bytes(self, key: str) -> bytes:
        with open(key, "rb") as handle:
            return handle.read()

    def exists(self, key: str) -> bool:
        return os.path.exists(key)

    def is_dir(self, key: str) -> bool:
        return os.path.isdir(key)

    def write(self, key: str, data: bytes) -> None:
        target = os.path.realpath(key) if os.path.islink(key) else key
        try:
            mode: int | None = os.stat(target).st_mode & 0o7777
        except FileNotFoundError:
            mode = None
        directory, name = os.path.split(target)
        temp = os.path.join(directory, f".{name[:64]}.{secrets.token_hex(6)}{TEMP_SUFFIX}")
        descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(data)
            if mode is not None:
                os.chmod(temp, mode)
            os.replace(temp, target)
        except BaseException:
            try:
                os.unlink(temp)
            except OSError:
                pass
            raise

    def delete(self, key: str) -> None:
        if os.path.isdir(key) and not os.path.islink(key):
            os.rmdir(key)
        else:
            os.unlink(key)

    def make_dirs(self, key: str) -> list[str]:
        missing: list[str] = []
        current = key
        while current and not os.path.isdir(current):
            missing.append(current)
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        created: list[str] = []
        for directory in reversed(missing):
            os.mkdir(directory)
            created.append(directory)
        return created

    def snapshot(self, key: str) -> object:
        if not os.path.isfile(key):
            return None
        return _Saved(self.read_bytes(key), os.stat(key).st_mode & 0o7777)

    def restore(self, key: str, snapshot: object) -> None:
        if snapshot is None:
            if os.path.lexists(key):
                self.delete(key)
            return
        assert isinstance(snapshot, _Saved)
        self.write(key, snapshot.data)
        os.chmod(key, snapshot.mode)
