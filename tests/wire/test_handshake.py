"""Opening-handshake rules, sans-IO."""

from __future__ import annotations

import pytest

from echsd.wire.handshake import check_handshake, host_of


@pytest.mark.parametrize(
    ("path", "host", "headers", "transport", "status"),
    [
        ("/v1", "localhost", [], "unix", None),
        ("/v1", "anything.example", [], "unix", None),
        ("/v1?x=1", "127.0.0.1:9", [], "tcp", None),
        ("/v1", "[::1]:9", [], "tcp", None),
        ("/v1", "LOCALHOST:80", [], "tcp", None),
        ("/v1", "127.8.9.10", [], "tcp", None),
        ("/v1", "evil.example:80", [], "tcp", 403),
        ("/v1", "10.0.0.1", [], "tcp", 403),
        ("/v1", None, [], "tcp", 403),
        ("/v1", "localhost", [(b"origin", b"http://localhost")], "unix", 403),
        ("/v1", "localhost", [(b"Origin", b"null")], "tcp", 403),
        ("/v2", "localhost", [], "unix", 404),
        ("/", "localhost", [], "tcp", 404),
    ],
)
def test_handshake_rules(path: str, host: str | None, headers: list[tuple[bytes, bytes]], transport: str, status: int | None) -> None:
    refusal = check_handshake(path, host, headers, transport)
    assert (refusal.status if refusal else None) == status


def test_host_of() -> None:
    assert host_of("[::1]:80") == "::1"
    assert host_of("localhost:8080") == "localhost"
    assert host_of("::1") == "::1"
    assert host_of("example.com") == "example.com"
