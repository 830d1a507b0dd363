"""Logging: JSON lines off a terminal, and secrets never reach a log line."""

from __future__ import annotations

import io
import json

from echsd import logs


def test_json_lines_and_redaction() -> None:
    stream = io.StringIO()
    logs.configure(level="debug", fmt="json", stream=stream)
    try:
        logs.register_secret("sk-live-SECRET-123456")
        log = logs.get_logger("test")
        log.info("calling", api_key="sk-live-SECRET-123456", url="https://x", note="key sk-live-SECRET-123456 inside")
        log.info("auth", authorization="Bearer abc", input_tokens=12, nested={"token": "t0p-s3cr3t-value", "ok": 1})
        try:
            raise RuntimeError("failed with sk-live-SECRET-123456")
        except RuntimeError:
            log.exception("boom")
    finally:
        logs.configure(fmt="json")
    text = stream.getvalue()
    assert "sk-live-SECRET-123456" not in text and "Bearer abc" not in text and "t0p-s3cr3t-value" not in text
    records = [json.loads(line) for line in text.splitlines()]
    assert records[0]["api_key"] == "[REDACTED]" and records[0]["note"] == "key [REDACTED] inside"
    assert records[1]["input_tokens"] == 12 and records[1]["nested"] == {"token": "[REDACTED]", "ok": 1}
    assert records[2]["level"] == "error" and "[REDACTED]" in records[2]["exception"]
