"""structlog, configured once per process.

Human-readable on a terminal, JSON lines otherwise (journald, files, CI). A redaction
processor masks secret-looking keys and every value registered with ``register_secret``
(API keys, access tokens, the client token), wherever it appears in a log line.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import structlog

_SECRET_KEYS = ("token", "authorization", "api_key", "apikey", "password", "secret", "cookie")
_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Never let ``value`` reach a log line (short values are ignored to avoid noise)."""
    if value and len(value) >= 8:
        _secrets.add(value)


def _scrub_text(text: str) -> str:
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, "[REDACTED]")
    return text


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return _scrub_text(value)
    if isinstance(value, dict):
        return {k: ("[REDACTED]" if _is_secret_key(k) else _scrub(v)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_scrub(v) for v in value)
    return value


def _is_secret_key(key: object) -> bool:
    if not isinstance(key, str):
        return False
    lowered = key.lower()
    return any(marker in lowered for marker in _SECRET_KEYS) and not lowered.endswith(
        ("_tokens", "tokens")
    )


def redact(_logger: Any, _method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    """structlog processor: mask secrets by key name and by registered value."""
    return {
        key: ("[REDACTED]" if _is_secret_key(key) else _scrub(value))
        for key, value in event_dict.items()
    }


def _scrub_rendered(_logger: Any, _method: str, rendered: str) -> str:
    # Last line of defence: exception text is rendered after `redact` has run.
    return _scrub_text(rendered) if _secrets else rendered


def configure(level: str | None = None, fmt: str | None = None, stream: Any = None) -> None:
    """Set up structlog for this process. ``fmt`` is ``console``, ``json`` or ``auto``."""
    stream = stream or sys.stderr
    level_name = (level or os.environ.get("ECHS_LOG_LEVEL") or "info").upper()
    fmt = fmt or os.environ.get("ECHS_LOG_FORMAT") or "auto"
    if fmt == "auto":
        fmt = "console" if getattr(stream, "isatty", lambda: False)() else "json"
    renderer: Any
    if fmt == "console":
        renderer = structlog.dev.ConsoleRenderer(colors="NO_COLOR" not in os.environ)
    else:
        renderer = structlog.processors.JSONRenderer()
    numeric = getattr(logging, level_name, logging.INFO)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info if fmt == "json" else _noop,
            redact,
            renderer,
            _scrub_rendered,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=_Unfailing(stream)),
        cache_logger_on_first_use=False,
    )


class _Unfailing:
    """A log stream whose failures are dropped: once the terminal of ``make run`` is gone
    (SIGHUP; writes then fail with EIO) or a pipe reader left, the daemon must still stop
    gracefully instead of dying on its next log line."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> None:
        try:
            self._stream.write(text)
        except (OSError, ValueError):  # ValueError: the stream was closed
            pass

    def flush(self) -> None:
        try:
            self._stream.flush()
        except (OSError, ValueError):
            pass


def _noop(_logger: Any, _method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    return event_dict


def get_logger(name: str) -> Any:
    return structlog.get_logger(name)


# Defaults until a command configures explicitly: stderr, so stdout stays clean for --json.
configure()
