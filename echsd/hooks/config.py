"""``[hooks]`` of ``config.toml``: a program to run, and URLs to post to, when something
happens on a thread that a person wants to hear about.

    [hooks]
    command = "/home/me/bin/echs-notify"   # run once per event, the event as JSON on stdin
    args = ["--urgent"]                    # optional
    events = ["turn.completed", "approval.requested"]   # optional filter (default: DEFAULT_EVENTS)
    timeout_s = 10                         # optional: killed (with its process group) after this

    [[hooks.webhook]]
    url = "https://example.com/echsd"
    secret = "..."                         # optional: HMAC-SHA256 of the body in X-Echsd-Signature-256
    events = ["turn.error"]                # optional filter
    timeout_s = 10                         # optional, per attempt

Sans-IO: values in, a frozen ``HooksConfig`` out; a bad value is one line naming it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from echsd.events import EVENT_TYPES

DEFAULT_EVENTS = ("turn.completed", "turn.error", "run.finished", "approval.requested", "subagent.completed", "thread.given_up")
DEFAULT_TIMEOUT_S = 10.0
MAX_TIMEOUT_S = 3600.0
COMMAND_KEYS = ("command", "args", "events", "timeout_s", "webhook")
WEBHOOK_KEYS = ("url", "secret", "events", "timeout_s")


class HooksConfigError(ValueError):
    """A bad ``[hooks]`` table; the message (one line) names the setting."""


@dataclass(frozen=True)
class CommandHook:
    command: str
    args: tuple[str, ...] = ()
    events: frozenset[str] = frozenset(DEFAULT_EVENTS)
    timeout_s: float = DEFAULT_TIMEOUT_S


@dataclass(frozen=True)
class Webhook:
    url: str
    secret: str | None = None
    events: frozenset[str] = frozenset(DEFAULT_EVENTS)
    timeout_s: float = DEFAULT_TIMEOUT_S

    @property
    def shown(self) -> str:
        """The URL as logs show it: scheme and host only (a webhook's path or query is often
        its secret, as Slack's are)."""
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}/…"

    def __repr__(self) -> str:  # never the secret in a log line
        return f"Webhook(url={self.shown!r}, events={sorted(self.events)})"


@dataclass(frozen=True)
class HooksConfig:
    command: CommandHook | None = None
    webhooks: tuple[Webhook, ...] = ()

    @property
    def events(self) -> frozenset[str]:
        """Every event type some hook wants."""
        wanted = set(self.command.events) if self.command else set()
        for hook in self.webhooks:
            wanted |= hook.events
        return frozenset(wanted)

    def __bool__(self) -> bool:
        return self.command is not None or bool(self.webhooks)


def load_hooks(table: Any, where: str) -> HooksConfig:
    """The ``[hooks]`` table (None: absent) of the file ``where``."""
    if table is None:
        return HooksConfig()
    if not isinstance(table, dict):
        raise HooksConfigError(f"invalid setting 'hooks' in {where}: expected a table")
    _known(table, COMMAND_KEYS, "hooks", where)
    command = None
    if table.get("command") is not None:
        path = table["command"]
        if not isinstance(path, str) or not path.strip():
            raise HooksConfigError(f"invalid setting 'hooks.command' in {where}: expected the program to run")
        args = table.get("args", [])
        if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
            raise HooksConfigError(f"invalid setting 'hooks.args' in {where}: expected a list of strings")
        command = CommandHook(path, tuple(args), _events(table, "hooks", where), _timeout(table, "hooks", where))
    elif "args" in table:
        raise HooksConfigError(f"invalid setting 'hooks.args' in {where}: args without a command")
    hooks = table.get("webhook", [])
    if isinstance(hooks, dict):
        hooks = [hooks]
    if not isinstance(hooks, list):
        raise HooksConfigError(f"invalid setting 'hooks.webhook' in {where}: expected [[hooks.webhook]] tables")
    webhooks = tuple(_webhook(hook, f"hooks.webhook[{index}]", where) for index, hook in enumerate(hooks))
    return HooksConfig(command, webhooks)


def _webhook(table: Any, name: str, where: str) -> Webhook:
    if not isinstance(table, dict):
        raise HooksConfigError(f"invalid setting '{name}' in {where}: expected a table")
    _known(table, WEBHOOK_KEYS, name, where)
    url = table.get("url")
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise HooksConfigError(f"invalid setting '{name}.url' in {where}: expected an http(s) URL")
    secret = table.get("secret")
    if secret is not None and (not isinstance(secret, str) or not secret):
        raise HooksConfigError(f"invalid setting '{name}.secret' in {where}: expected a non-empty string")
    return Webhook(url, secret, _events(table, name, where), _timeout(table, name, where))


def _known(table: dict[str, Any], keys: tuple[str, ...], name: str, where: str) -> None:
    unknown = sorted(key for key in table if key not in keys)
    if unknown:
        raise HooksConfigError(f"unknown setting '{name}.{unknown[0]}' in {where}; known: {', '.join(keys)}")


def _events(table: dict[str, Any], name: str, where: str) -> frozenset[str]:
    events = table.get("events")
    if events is None:
        return frozenset(DEFAULT_EVENTS)
    if not isinstance(events, list) or not events or not all(isinstance(event, str) and event for event in events):
        raise HooksConfigError(f"invalid setting '{name}.events' in {where}: expected a non-empty list of event types")
    unknown = sorted(set(events) - set(EVENT_TYPES))
    if unknown:
        raise HooksConfigError(f"invalid setting '{name}.events' in {where}: no event type {unknown[0]!r} (see docs/protocol.md)")
    return frozenset(events)


def _timeout(table: dict[str, Any], name: str, where: str) -> float:
    value = table.get("timeout_s", DEFAULT_TIMEOUT_S)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_TIMEOUT_S:
        raise HooksConfigError(f"invalid setting '{name}.timeout_s' in {where}: expected seconds, more than 0 and at most {MAX_TIMEOUT_S:g}")
    return float(value)
