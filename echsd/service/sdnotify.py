"""A tiny sd_notify(3): readiness, watchdog and stopping notices to systemd, no dependency.

systemd (``Type=notify``) passes ``$NOTIFY_SOCKET``: a unix datagram socket path, or an
abstract one written ``@name``. Each notice is one datagram of ``KEY=VALUE`` lines. With
``WatchdogSec=`` it also passes ``$WATCHDOG_USEC`` (and ``$WATCHDOG_PID``): we must send
``WATCHDOG=1`` more often than that, so we ping every half of it from the event loop,
which proves the loop is not stuck. Outside systemd there is no socket and every call
does nothing; a failing socket is logged once as a warning and never raised, because a
notice must never take the daemon down.

``Notifier.from_environ`` also removes those variables from ``os.environ`` (like
``sd_notify(unset_environment=1)``), so the tools the agents run do not inherit them.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import MutableMapping

import trio

from echsd.logs import get_logger

log = get_logger(__name__)

ENV_KEYS = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")


@dataclass
class Notifier:
    address: str | bytes | None = None  # None: not under systemd (nothing to notify)
    watchdog_s: float | None = None  # the watchdog timeout; ping at half of it
    _warned: bool = False

    @classmethod
    def from_environ(cls, environ: MutableMapping[str, str] | None = None) -> Notifier:
        env = os.environ if environ is None else environ
        values = {key: env.pop(key, None) for key in ENV_KEYS}
        raw = values["NOTIFY_SOCKET"]
        address: str | bytes | None = None
        if raw:
            address = ("\0" + raw[1:]).encode() if raw.startswith("@") else raw
        return cls(address=address, watchdog_s=_watchdog_s(values["WATCHDOG_USEC"], values["WATCHDOG_PID"]))

    def notify(self, *lines: str) -> bool:
        """Send one notice (e.g. ``"READY=1"``); False when not sent."""
        if self.address is None:
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.setblocking(False)
                sock.connect(self.address)
                sock.send("\n".join(lines).encode())
        except OSError as exc:
            if not self._warned:
                log.warning("cannot notify systemd", error=str(exc))
                self._warned = True
            return False
        return True

    async def watchdog(self) -> None:
        """Ping the watchdog forever (run as a task when ``watchdog_s`` is set)."""
        assert self.watchdog_s is not None
        while True:
            self.notify("WATCHDOG=1")
            await trio.sleep(self.watchdog_s / 2)


def _watchdog_s(usec: str | None, pid: str | None) -> float | None:
    """The watchdog timeout in seconds, if it is meant for this process."""
    if not usec:
        return None
    try:
        if pid and int(pid) != os.getpid():
            return None
        value = int(usec)
    except ValueError:
        return None
    return value / 1_000_000 if value > 0 else None
