"""Finding a thread's project instructions: the ``AGENTS.md`` files that apply to its cwd.

Blocking file IO: run it off the event loop (``trio.to_thread``). The files, in the order
the model reads them: the user's own (``$XDG_CONFIG_HOME/echsd/AGENTS.md``), then one per
directory from the repository root (the nearest directory above the cwd holding ``.git``;
without one, the cwd alone) down to the cwd, root first. In each directory an
``AGENTS.override.md`` takes the place of its ``AGENTS.md``. Together they are cut at
``max_bytes``: a file that passes the cap keeps its head and a note saying how much was
left out; files after it are listed as left out, not read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

FILE_NAMES = ("AGENTS.override.md", "AGENTS.md")  # per directory, the first that exists


@dataclass(frozen=True)
class ProjectDoc:
    path: str
    text: str  # what is sent (may end with a note saying what was cut)
    size: int  # bytes in the file
    truncated: bool = False  # cut at the cap (text "" : left out whole)
    error: str | None = None  # could not be read (text ""), say why

    def describe(self) -> dict[str, object]:
        """What ``echs show`` lists."""
        entry: dict[str, object] = {"path": self.path, "bytes": self.size}
        if self.truncated:
            entry["truncated"] = True
        if self.error:
            entry["error"] = self.error
        return entry


def repository_root(cwd: Path) -> Path | None:
    for directory in (cwd, *cwd.parents):
        if (directory / ".git").exists():
            return directory
    return None


def doc_paths(cwd: Path, user_doc: Path | None) -> list[Path]:
    """The files that apply to ``cwd``, in reading order (only those that exist)."""
    root = repository_root(cwd) or cwd
    directories = [root, *(root.joinpath(*cwd.relative_to(root).parts[:depth]) for depth in range(1, len(cwd.relative_to(root).parts) + 1))]
    found = [user_doc] if user_doc is not None and user_doc.is_file() else []
    for directory in directories:
        for name in FILE_NAMES:
            candidate = directory / name
            if candidate.is_file():
                found.append(candidate)
                break
    return found


def discover(cwd: str, user_doc: Path | None, max_bytes: int) -> tuple[ProjectDoc, ...]:
    """The ``AGENTS.md`` files of ``cwd``, read within ``max_bytes`` altogether."""
    docs = []
    left = max_bytes
    for path in doc_paths(Path(cwd), user_doc):
        try:
            size = path.stat().st_size
            if left <= 0:
                docs.append(ProjectDoc(str(path), "", size, truncated=True))
                continue
            with path.open("rb") as handle:
                raw = handle.read(left + 1)
        except OSError as exc:
            docs.append(ProjectDoc(str(path), "", 0, error=exc.strerror or str(exc)))
            continue
        if len(raw) > left:
            text = raw[:left].decode("utf-8", errors="ignore")  # a character cut in half goes
            note = f"\n[echsd: {size - left:,} more bytes of this file left out: AGENTS.md text is capped at {max_bytes:,} bytes]"
            docs.append(ProjectDoc(str(path), text + note, size, truncated=True))
            left = 0
        else:
            docs.append(ProjectDoc(str(path), raw.decode("utf-8", errors="replace"), size))
            left -= len(raw)
    return tuple(docs)


def time_zone(env: Mapping[str, str] | None = None) -> str:
    """The local time zone's name (``Etc/UTC``, ``Europe/Paris``), as best known."""
    tz = (env if env is not None else os.environ).get("TZ", "").lstrip(":")
    if tz and "/" in tz:
        return tz
    try:
        target = os.readlink("/etc/localtime")
    except OSError:
        target = ""
    if "zoneinfo/" in target:
        return target.split("zoneinfo/", 1)[1]
    try:
        named = Path("/etc/timezone").read_text().strip()
    except OSError:
        named = ""
    return named or tz or "Etc/UTC"
