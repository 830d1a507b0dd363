"""The sans-IO HTTP/1.1 of the model stream: request bytes, and responses however they are cut."""

from __future__ import annotations

import gzip
from urllib.parse import urlsplit

import pytest

from echsd.codex.h1 import ProtocolError, ResponseReader, request_head

CHUNKED = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Request-Id: r1\r\nTransfer-Encoding: chunked\r\n\r\n"
    + b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in (b"event: a\ndata:", b" 1\n\n"))
    + b"0\r\n\r\n"
)


def read(*pieces: bytes, eof: bool = False) -> tuple[ResponseReader, bytes]:
    reader = ResponseReader()
    body = b""
    for piece in pieces:
        reader.feed(piece)
        body += reader.take_body()
    if eof:
        reader.eof()
        body += reader.take_body()
    return reader, body


def test_request_head_names_host_length_and_asks_for_no_encoding() -> None:
    head = request_head("POST", urlsplit("http://127.0.0.1:8080/v1/responses?x=1"), {"Accept": "text/event-stream", "Host": "evil", "Content-Length": "9"}, 42)
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /v1/responses?x=1 HTTP/1.1"
    assert lines[1:4] == ["Host: 127.0.0.1:8080", "Content-Length: 42", "Accept-Encoding: identity"]
    assert "Accept: text/event-stream" in lines and "Host: evil" not in lines and head.endswith(b"\r\n\r\n")
    assert b"Host: api.example.com\r\n" in request_head("POST", urlsplit("https://api.example.com:443/v1"), {}, 0)
    assert b"Host: [::1]:9\r\n" in request_head("POST", urlsplit("http://[::1]:9/"), {}, 0)


@pytest.mark.parametrize("bad", [{"X-A": "1\r\nX-Injected: 2"}, {"X\nB": "1"}, {"X-A": "nul\0"}, {"": "1"}, {"X-A": "café ☕"}])
def test_request_head_refuses_what_cannot_be_sent(bad: dict[str, str]) -> None:
    with pytest.raises(ProtocolError):
        request_head("POST", urlsplit("http://h/"), bad, 0)


def test_a_chunked_response_reads_the_same_however_it_is_cut() -> None:
    whole, body = read(CHUNKED)
    assert (whole.status, whole.headers["x-request-id"], body) == (200, "r1", b"event: a\ndata: 1\n\n")
    assert whole.complete and whole.reusable
    for cut in range(1, len(CHUNKED)):
        reader, cut_body = read(CHUNKED[:cut], CHUNKED[cut:])
        assert (reader.status, reader.headers, cut_body, reader.complete) == (200, whole.headers, body, True)


def test_several_chunks_of_one_receive_come_out_as_one_piece() -> None:
    reader = ResponseReader()
    reader.feed(CHUNKED[:-5])
    assert reader.take_body() == b"event: a\ndata: 1\n\n" and reader.take_body() == b""
    assert not reader.complete


def test_content_length_and_close_delimited_bodies() -> None:
    reader, body = read(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 5\r\n\r\nhello")
    assert (reader.status, body, reader.complete, reader.reusable) == (400, b"hello", True, True)
    reader, body = read(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil ", b"the end")
    assert not reader.complete
    reader.eof()
    assert reader.complete and not reader.reusable and body == b"until the end"
    closing, _ = read(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    assert closing.complete and not closing.reusable


def test_cut_off_and_silent_answers_are_protocol_errors() -> None:
    reader, _ = read(CHUNKED[:-7])
    with pytest.raises(ProtocolError, match="before the response body ended"):
        reader.eof()
    with pytest.raises(ProtocolError, match="without answering"):
        ResponseReader().eof()
    with pytest.raises(ProtocolError, match="malformed"):
        read(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
    with pytest.raises(ProtocolError, match="malformed"):
        read(b"SMTP ready\r\n\r\n")


def test_informational_answers_are_skipped() -> None:
    reader, body = read(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\nX-B: 2\r\n\r\nok")
    assert (reader.status, body, reader.headers) == (201, b"ok", {"content-length": "2", "x-b": "2"})
    assert reader.complete


def test_an_encoded_body_is_decoded_or_refused() -> None:
    packed = gzip.compress(b"data: 1\n\n" * 50)
    reader, body = read(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(packed), packed[:10], packed[10:])
    assert body == b"data: 1\n\n" * 50 and reader.complete
    with pytest.raises(ProtocolError, match="'br'"):
        read(b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 1\r\n\r\nx")
