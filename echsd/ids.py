"""Identifier formats. Thread ids are part of the contract: ``thr_`` + 16 hex digits."""

from __future__ import annotations

import re
import secrets

THREAD_ID_RE = re.compile(r"^thr_[0-9a-f]{16}$")


def new_thread_id() -> str:
    return "thr_" + secrets.token_hex(8)


def new_input_id() -> str:
    return "in_" + secrets.token_hex(8)


def new_turn_id() -> str:
    return "turn_" + secrets.token_hex(8)


def new_approval_id() -> str:
    return "apr_" + secrets.token_hex(8)


def is_thread_id(value: object) -> bool:
    return isinstance(value, str) and THREAD_ID_RE.match(value) is not None
