"""Listen addresses (``--listen``, ``--app-server``): ``unix://PATH`` or ``tcp://HOST:PORT``."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

from echsd.settings.errors import SettingsError


@dataclass(frozen=True)
class ListenAddress:
    kind: str  # "unix" | "tcp"
    path: Path | None = None
    host: str | None = None
    port: int | None = None

    def __str__(self) -> str:
        if self.kind == "unix":
            return f"unix://{self.path}"
        return f"tcp://{self.host}:{self.port}"

    @property
    def is_loopback(self) -> bool:
        return self.kind == "unix" or is_loopback_host(self.host or "")


def is_loopback_host(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_listen(url: str, state_dir: Path, where: str = "--listen") -> ListenAddress:
    """``where`` names the source in errors (``--listen``, ``setting 'listen' in FILE``)."""
    url = url.strip()
    if url.startswith("unix://"):
        path = url[len("unix://") :]
        if not path:
            raise SettingsError(f"invalid {where} {url!r}: unix:// needs a socket path")
        return ListenAddress("unix", path=Path(path).expanduser())
    if url.startswith(("tcp://", "ws://")):
        rest = url.split("://", 1)[1].rstrip("/")
        if rest.endswith("/v1"):
            rest = rest[: -len("/v1")]
        host, sep, port_text = rest.rpartition(":")
        if not sep or not host:
            raise SettingsError(f"invalid {where} {url!r}: expected tcp://HOST:PORT")
        try:
            port = int(port_text)
        except ValueError:
            raise SettingsError(f"invalid {where} {url!r}: port {port_text!r} is not a number") from None
        if not 0 <= port <= 65535:
            raise SettingsError(f"invalid {where} {url!r}: port out of range")
        return ListenAddress("tcp", host=host.strip("[]"), port=port)
    raise SettingsError(f"invalid {where} {url!r}: expected unix://PATH or tcp://HOST:PORT")
