"""The file view the applier works on: a small Protocol, so planning stays free of IO.

Paths from the patch go through ``resolve`` once; every other method takes the key it
returns. ``snapshot``/``restore`` let a failed commit put back what it already changed.
"""

from __future__ import annotations

from typing import Protocol


class FileView(Protocol):
    def resolve(self, path: str) -> str:
        """The key for a path as written in the patch (relative paths against the cwd)."""
        ...

    def read_bytes(self, key: str) -> bytes: ...

    def exists(self, key: str) -> bool: ...

    def is_dir(self, key: str) -> bool: ...

    def write(self, key: str, data: bytes) -> None:
        """Replace the file's content in one step (readers see old or new, never half)."""
        ...

    def delete(self, key: str) -> None:
        """Remove a file, or a directory that is empty."""
        ...

    def make_dirs(self, key: str) -> list[str]:
        """Create the directory ``key`` and missing parents; return those created, outermost first."""
        ...

    def snapshot(self, key: str) -> object:
        """Whatever ``restore`` needs to bring ``key`` back to its present state."""
        ...

    def restore(self, key: str, snapshot: object) -> None: ...
