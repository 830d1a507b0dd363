"""The client library's exceptions (shared by ``client`` and ``stream``)."""

from __future__ import annotations


class WireError(Exception):
    """A failed request or connection: ``code`` is the wire error code (CONTRACT.md 3.2)
    or one of the client's own: ``unavailable`` (cannot reach the daemon),
    ``connection_lost``, ``handshake_refused``."""

    def __init__(self, code: str, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retry_after_s = retry_after_s  # the daemon's hint: the same request may succeed after this long


class ConnectionLost(WireError):
    def __init__(self, message: str = "the connection to the daemon was lost") -> None:
        super().__init__("connection_lost", message)
