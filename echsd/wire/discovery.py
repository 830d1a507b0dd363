"""Where the daemon is and which token to present (CONTRACT.md 1.2), for clients.

Address: an explicit socket or URL, else ``ECHS_SOCKET``, else ``ECHS_URL``, else
``<state>/echsd.sock``. Token: an explicit token or token file, else ``ECHS_TOKEN``, else
``ECHS_TOKEN_FILE``, else ``<state>/token``. The state dir: explicit, else
``ECHS_STATE_DIR``, else ``$XDG_STATE_HOME/echsd``. Cheap to import: no daemon code.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from echsd.settings.state_dir import default_state_dir


class DiscoveryError(Exception):
    """No usable address or token; ``code`` as a wire error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Target:
    kind: str  # "unix" | "tcp"
    path: str | None = None
    host: str | None = None
    port: int | None = None

    def __str__(self) -> str:
        if self.kind == "unix":
            return f"unix://{self.path}"
        return f"ws://{self.host_header}/v1"

    @property
    def host_header(self) -> str:
        """What the handshake's ``Host`` names: any name on the socket, host:port on TCP."""
        if self.kind == "unix":
            return "localhost"
        host = f"[{self.host}]" if self.host and ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_url(url: str) -> Target:
    """``ws://HOST:PORT[/v1]``, ``tcp://HOST:PORT`` or ``unix://PATH``."""
    if url.startswith("unix://"):
        return Target("unix", path=url[len("unix://") :])
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("ws", "tcp"):
        raise DiscoveryError("bad_request", f"unsupported daemon URL {url!r}: use ws://HOST:PORT")
    rest = rest.split("/", 1)[0]
    host, colon, port = rest.rpartition(":")
    if not colon or not port.isdigit():
        raise DiscoveryError("bad_request", f"daemon URL {url!r} needs a port: ws://HOST:PORT")
    return Target("tcp", host=host.strip("[]") or "127.0.0.1", port=int(port))


def state_dir_of(state_dir: str | os.PathLike[str] | None, env: Mapping[str, str]) -> Path:
    return Path(state_dir).expanduser() if state_dir is not None else default_state_dir(env)


def resolve_target(
    socket: str | os.PathLike[str] | None,
    url: str | None,
    state_dir: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None = None,
) -> Target:
    env = os.environ if env is None else env
    if socket is not None:
        return Target("unix", path=str(Path(socket).expanduser()))
    if url is not None:
        return parse_url(url)
    if env.get("ECHS_SOCKET"):
        return Target("unix", path=str(Path(env["ECHS_SOCKET"]).expanduser()))
    if env.get("ECHS_URL"):
        return parse_url(env["ECHS_URL"])
    return Target("unix", path=str(state_dir_of(state_dir, env) / "echsd.sock"))


def resolve_token(
    token: str | None,
    token_file: str | os.PathLike[str] | None,
    state_dir: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None = None,
) -> str:
    env = os.environ if env is None else env
    if token:
        return token
    if token_file is None:
        if env.get("ECHS_TOKEN"):
            return env["ECHS_TOKEN"]
        token_file = env.get("ECHS_TOKEN_FILE") or state_dir_of(state_dir, env) / "token"
    path = Path(token_file).expanduser()
    try:
        value = path.read_text().strip()
    except OSError as exc:
        raise DiscoveryError(
            "unauthorized", f"cannot read the token file {path}: {exc.strerror} (has `echsd serve` run with this state dir?)"
        ) from None
    if not value:
        raise DiscoveryError("unauthorized", f"the token file {path} is empty")
    return value
