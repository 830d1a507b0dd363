"""The frame codec (CONTRACT.md 3.1-3.3), sans-IO: bytes in, values out, and back.

Every frame is one MessagePack map. The daemon decodes a client frame into a ``Request``
or raises ``FrameError`` (answered with ``"id": null``) or ``RequestError`` (answered
with the request's id); it encodes responses and events. Events are encoded once and a
batch frame ``{"events": [...]}`` is built by concatenating already-encoded events behind
a hand-written map/array header, so batching costs no re-encoding.

The client uses the same module to encode requests and to split a daemon frame into
responses and events. Nothing here imports the daemon.
"""

from __future__ import annotations

import struct
import threading
from dataclasses import dataclass
from typing import Any

import msgpack

from echsd.wire.errors import WireError

PROTOCOL_VERSION = 1
_BATCH_KEY = msgpack.packb("events")
_REQUEST_KEYS = frozenset({"id", "op", "params"})


class FrameError(Exception):
    """The frame is not a request at all (text, undecodable, not a map): ``id`` is null."""

    code = "bad_request"


class RequestError(Exception):
    """A well-formed frame that is not a valid request; ``id`` is echoed when it is an int."""

    def __init__(self, request_id: int | None, code: str, message: str) -> None:
        super().__init__(message)
        self.request_id = request_id
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class Request:
    id: int
    op: str
    params: dict[str, Any]


_local = threading.local()


def packb(value: Any) -> bytes:
    """MessagePack bytes (str as str, bytes as bin).

    Reuses one ``Packer`` per OS thread: ``msgpack.packb`` builds a new one per call,
    which costs more than packing a small event.
    """
    try:
        packer = _local.packer
    except AttributeError:
        packer = _local.packer = msgpack.Packer(use_bin_type=True)
    try:
        return packer.pack(value)  # type: ignore[no-any-return]
    except BaseException:
        packer.reset()  # a failed pack may leave partial output behind
        raise


def unpackb(data: bytes) -> Any:
    """Decode one MessagePack value; any malformation raises ``FrameError``."""
    try:
        return msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises a zoo of types (ExtraData, ValueError, ...)
        raise FrameError(f"undecodable frame: {type(exc).__name__}") from None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def decode_request(message: bytes | str) -> Request:
    """A client frame as a ``Request``; raises ``FrameError`` or ``RequestError``."""
    if isinstance(message, str):
        raise FrameError(_TEXT_FRAME)
    return _request_from(unpackb(message))


_TEXT_FRAME = "text frames are not accepted: send one MessagePack map per binary frame"
DECODE_STEP_BYTES = 64 * 1024


class RequestDecoder:
    """Decodes one (big) client frame a slice at a time, so that the IO shell can let
    other connections run between slices: a 16 MiB array of small values costs ~0.4 s of
    CPU in one ``unpackb`` call, ~30 ms at most per 64 KiB slice here (msgpack's unpacker
    resumes where the previous slice ended).

    ``step()`` until it returns True, then ``request()``.
    """

    def __init__(self, message: bytes | str, step_bytes: int = DECODE_STEP_BYTES) -> None:
        self._message = message
        self._step = step_bytes
        self._offset = 0
        self._unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=max(1, len(message)))
        self._frame: Any = None
        self._error: FrameError | None = FrameError(_TEXT_FRAME) if isinstance(message, str) else None
        self._done = self._error is not None

    def step(self) -> bool:
        """Decode the next slice; True once the frame is decoded (or found bad)."""
        if self._done:
            return True
        message = self._message
        assert isinstance(message, bytes)
        end = min(len(message), self._offset + self._step)
        try:
            self._unpacker.feed(message[self._offset : end])
            self._offset = end
            self._frame = self._unpacker.unpack()
        except msgpack.OutOfData:
            if end < len(message):
                return False
            self._error = FrameError("undecodable frame: the MessagePack value is incomplete")
        except Exception as exc:
            self._error = FrameError(f"undecodable frame: {type(exc).__name__}")
        else:
            if end < len(message) or self._unpacker.tell() != len(message):
                self._error = FrameError("undecodable frame: ExtraData")
        self._done = True
        self._message = b""
        return True

    def request(self) -> Request:
        """The decoded request; raises ``FrameError`` or ``RequestError``."""
        assert self._done, "step() until it returns True"
        if self._error is not None:
            raise self._error
        return _request_from(self._frame)


def _request_from(frame: Any) -> Request:
    if not isinstance(frame, dict):
        raise FrameError(f"a frame must hold a map, not {type(frame).__name__}")
    request_id = frame.get("id")
    if not _is_int(request_id):
        raise RequestError(None, "bad_request", "'id' must be an integer")
    unknown = sorted(str(key) for key in frame if key not in _REQUEST_KEYS)
    if unknown:
        raise RequestError(request_id, "bad_request", f"unknown request field(s): {', '.join(unknown)}")
    op = frame.get("op")
    if not isinstance(op, str) or not op:
        raise RequestError(request_id, "bad_request", "'op' must be a non-empty string")
    params = frame.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise RequestError(request_id, "bad_request", "'params' must be a map")
    return Request(request_id, op, params)


def encode_request(request_id: int, op: str, params: dict[str, Any]) -> bytes:
    return packb({"id": request_id, "op": op, "params": params})


def encode_result(request_id: int, result: Any) -> bytes:
    return packb({"id": request_id, "ok": True, "result": result})


def encode_error(request_id: int | None, code: str, message: str, retry_after_s: float | None = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if retry_after_s is not None:
        error["retry_after_s"] = retry_after_s
    return packb({"id": request_id, "ok": False, "error": error})


def _array_header(count: int) -> bytes:
    if count < 16:
        return bytes((0x90 | count,))
    if count < 1 << 16:
        return b"\xdc" + struct.pack(">H", count)
    return b"\xdd" + struct.pack(">I", count)


def encode_batch(parts: list[bytes], count: int) -> bytes:
    """One frame for ``count`` already-encoded events (``parts`` concatenate to them):
    the event itself when there is one, else ``{"events": [...]}``."""
    if count == 1:
        return parts[0]
    return b"\x81" + _BATCH_KEY + _array_header(count) + b"".join(parts)


def response_result(response: dict[str, Any]) -> Any:
    """A response's result; a failed one raises ``WireError`` with its code and message."""
    if response.get("ok"):
        return response.get("result")
    error = response.get("error") or {}
    retry = error.get("retry_after_s")
    raise WireError(str(error.get("code", "internal")), str(error.get("message", "")), float(retry) if isinstance(retry, (int, float)) else None)


def split_frame(message: bytes | str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A daemon frame as ``(responses, events)``, for clients; raises ``FrameError``."""
    if isinstance(message, str):
        raise FrameError("the daemon sent a text frame")
    frame = unpackb(message)
    if not isinstance(frame, dict):
        raise FrameError(f"the daemon sent a {type(frame).__name__}, not a map")
    if "events" in frame and isinstance(frame["events"], list):
        return [], [event for event in frame["events"] if isinstance(event, dict)]
    if "event" in frame:
        return [], [frame]
    return [frame], []
