"""The web door's sans-IO parts: logins and sessions on a clock the test moves, and the
Host / Origin / CSRF checks on requests as a browser (or an attacker's page) sends them."""

from __future__ import annotations

import pytest

from echsd.settings import ListenAddress
from echsd.web.guard import Request, allowed_hosts, check_csrf, check_host, check_origin
from echsd.web.sessions import MAX_SESSIONS, LoginRefused, WebSessions


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def sessions(clock: Clock) -> WebSessions:
    return WebSessions(code_s=60, session_s=3600, idle_s=600, clock=clock)


def test_a_code_works_once_and_only_for_a_while() -> None:
    clock = Clock()
    book = sessions(clock)
    code = book.new_code()
    token, session = book.redeem(code)
    assert book.find(token) is session and session.csrf and token != code
    with pytest.raises(LoginRefused):
        book.redeem(code)
    late = book.new_code()
    clock.now += 60
    with pytest.raises(LoginRefused):
        book.redeem(late)
    for bogus in ("", "nope", token):
        with pytest.raises(LoginRefused):
            book.redeem(bogus)


def test_sessions_end_by_age_idleness_and_revocation() -> None:
    clock = Clock()
    book = sessions(clock)
    token, session = book.redeem(book.new_code())
    for _ in range(5):  # used every 9 minutes: never idle, until its 60 minutes are up
        clock.now += 540
        assert book.find(token) is session
    clock.now += 700
    assert book.find(token) is None and not book.alive(session)
    idle, idler = book.redeem(book.new_code())
    clock.now += 600
    assert book.find(idle) is None
    watched, watcher = book.redeem(book.new_code())
    for _ in range(3):  # a page whose stream is open keeps its session in use
        clock.now += 500
        assert book.alive(watcher)
    assert book.find(watched) is watcher
    pending = book.new_code()
    assert book.revoke() == {"sessions": 1, "codes": 1}
    assert book.find(watched) is None and not book.alive(watcher)
    with pytest.raises(LoginRefused):
        book.redeem(pending)


def test_the_least_recently_used_session_makes_room() -> None:
    book = sessions(Clock())
    tokens = [book.redeem(book.new_code())[0] for _ in range(MAX_SESSIONS)]
    book.find(tokens[0])  # used: the second is now the least recently used
    book.redeem(book.new_code())
    assert book.find(tokens[0]) is not None and book.find(tokens[1]) is None and len(book) == MAX_SESSIONS


def test_the_hosts_that_name_a_listener() -> None:
    assert allowed_hosts(ListenAddress("tcp", host="127.0.0.1", port=8765), 8765) == {"127.0.0.1:8765", "localhost:8765"}
    assert allowed_hosts(ListenAddress("tcp", host="::1", port=8765), 8765) == {"[::1]:8765", "localhost:8765"}
    assert allowed_hosts(ListenAddress("tcp", host="box.lan", port=80), 80) == {"box.lan:80"}
    wildcard = allowed_hosts(ListenAddress("tcp", host="0.0.0.0", port=9000), 9000)
    assert "localhost:9000" in wildcard and "0.0.0.0:9000" not in wildcard


@pytest.mark.parametrize(
    ("host", "refused"),
    [("127.0.0.1:8765", False), ("LOCALHOST:8765", False), ("127.0.0.1:8766", True), ("evil.example:8765", True),
     ("127.0.0.1", True), ("", True), ("[::1]:8765", True)],
)  # fmt: skip
def test_check_host(host: str, refused: bool) -> None:
    hosts = allowed_hosts(ListenAddress("tcp", host="127.0.0.1", port=8765), 8765)
    assert (check_host(Request("GET", "/", {"host": host.lower()}), hosts) is not None) == refused


def test_a_missing_port_means_80() -> None:
    hosts = allowed_hosts(ListenAddress("tcp", host="box.lan", port=80), 80)
    assert check_host(Request("GET", "/", {"host": "box.lan"}), hosts) is None


def test_check_origin_and_csrf() -> None:
    own = {"host": "127.0.0.1:8765"}
    assert check_origin(Request("GET", "/api/threads", own), api=True) is None  # a same-origin GET may omit it
    assert check_origin(Request("POST", "/api/x", {**own, "origin": "http://127.0.0.1:8765"}), api=True) is None
    assert check_origin(Request("POST", "/api/x", own), api=True) is not None  # a change must carry it
    assert check_origin(Request("GET", "/", {**own, "origin": "http://evil.example"}), api=False) is not None
    assert check_origin(Request("GET", "/api/x", {**own, "sec-fetch-site": "same-site"}), api=True) is not None
    assert check_origin(Request("GET", "/", {**own, "sec-fetch-site": "cross-site"}), api=False) is None  # a link to the page
    assert check_csrf(Request("POST", "/api/x", {"x-echsd-csrf": "abc"}), "abc") is None
    assert check_csrf(Request("POST", "/api/x", {"x-echsd-csrf": "abd"}), "abc") is not None
    assert check_csrf(Request("POST", "/api/x", {}), "abc") is not None
    assert check_csrf(Request("GET", "/api/x", {}), "abc") is None
