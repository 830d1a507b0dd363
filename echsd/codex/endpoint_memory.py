"""What a daemon learnt about its endpoint that must outlive a request, a thread and a restart.

Today one fact: the endpoint refuses reasoning summaries for this organisation ("Your
organization must be verified to generate reasoning summaries"). Learnt once, every later
request of every thread and sub-agent leaves the summary out, so the refusal costs one 400
per daemon and endpoint, not one per thread. Kept in ``<state>/endpoint-memory.json``,
keyed by the endpoint's base URL (a daemon pointed elsewhere starts afresh there).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import trio

from echsd.logs import get_logger

log = get_logger(__name__)

FILE_NAME = "endpoint-memory.json"


class EndpointMemory:
    def __init__(self, base_url: str, path: Path | None = None) -> None:
        """``path`` None: remembered for this process only (``echsd probe``, tests)."""
        self.base_url = base_url
        self.path = path
        self._facts: dict[str, Any] = _read(path).get(base_url, {}) if path is not None else {}

    @property
    def summaries_refused(self) -> bool:
        return "summaries_refused" in self._facts

    async def refuse_summaries(self, message: str) -> None:
        if self.summaries_refused:
            return
        self._facts["summaries_refused"] = {"at": time.time(), "message": message[:500]}
        log.warning("the endpoint refuses reasoning summaries; no request asks for them again", base_url=self.base_url)
        if self.path is not None:
            await trio.to_thread.run_sync(_write, self.path, self.base_url, dict(self._facts))


def _read(path: Path) -> dict[str, Any]:
    try:
        data = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, orjson.JSONDecodeError) as exc:
        log.warning("unreadable endpoint memory; starting afresh", path=str(path), error=str(exc))
        return {}
    return data if isinstance(data, dict) else {}


def _write(path: Path, base_url: str, facts: dict[str, Any]) -> None:
    """Atomically: other endpoints' facts are kept."""
    data = _read(path)
    data[base_url] = facts
    fd, tmp = tempfile.mkstemp(prefix=f".{FILE_NAME}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(orjson.dumps(data, option=orjson.OPT_INDENT_2))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
