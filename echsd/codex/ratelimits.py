"""Account rate limits as the ChatGPT Codex backend reports them (pure parsing).

Two sources, same meaning (openai/codex ``codex-api/src/rate_limits.rs``):

- response headers, per limit family ``x-<family>-...``: ``x-codex-primary-used-percent``,
  ``-primary-window-minutes``, ``-primary-reset-at`` (unix seconds), the same for
  ``secondary``, ``x-codex-credits-has-credits`` / ``-unlimited`` / ``-balance``, and
  ``x-<family>-limit-name``; besides ``codex`` there may be families such as
  ``codex-other`` (``x-codex-other-primary-used-percent``);
- the SSE event ``codex.rate_limits``: ``{"plan_type", "rate_limits": {"primary":
  {"used_percent", "window_minutes", "reset_at"}, "secondary": ...}, "credits": {...},
  "metered_limit_name"}``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping

_USED = "-primary-used-percent"


@dataclass(frozen=True, slots=True)
class RateLimitWindow:
    used_percent: float
    window_minutes: int | None = None
    resets_at: int | None = None  # unix seconds


@dataclass(frozen=True, slots=True)
class Credits:
    has_credits: bool
    unlimited: bool
    balance: str | None = None


@dataclass(frozen=True, slots=True)
class RateLimits:
    limit_id: str = "codex"
    limit_name: str | None = None
    primary: RateLimitWindow | None = None
    secondary: RateLimitWindow | None = None
    credits: Credits | None = None
    plan_type: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``account.rate_limits`` event data."""
        return asdict(self)


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number and abs(number) != float("inf") else None


def _int(value: Any) -> int | None:
    number = _float(value)
    return int(number) if number is not None else None


def _bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower() if value is not None else ""
    return True if text in ("true", "1") else False if text in ("false", "0") else None


def _window(used: Any, minutes: Any, reset: Any) -> RateLimitWindow | None:
    percent = _float(used)
    if percent is None:
        return None
    window = RateLimitWindow(percent, _int(minutes), _int(reset))
    has_data = percent != 0.0 or bool(window.window_minutes) or window.resets_at is not None
    return window if has_data else None


def _family(headers: Mapping[str, str], family: str) -> RateLimits | None:
    prefix = f"x-{family}"

    def window(which: str) -> RateLimitWindow | None:
        return _window(
            headers.get(f"{prefix}-{which}-used-percent"),
            headers.get(f"{prefix}-{which}-window-minutes"),
            headers.get(f"{prefix}-{which}-reset-at"),
        )

    credits = None
    has, unlimited = _bool(headers.get("x-codex-credits-has-credits")), _bool(headers.get("x-codex-credits-unlimited"))
    if family == "codex" and has is not None and unlimited is not None:
        credits = Credits(has, unlimited, (headers.get("x-codex-credits-balance") or "").strip() or None)
    name = (headers.get(f"{prefix}-limit-name") or "").strip() or None
    limits = RateLimits(family.replace("-", "_"), name, window("primary"), window("secondary"), credits)
    return limits if (limits.primary or limits.secondary or limits.credits) else None


def from_headers(headers: Mapping[str, str]) -> list[RateLimits]:
    """Every limit family in the headers (lower-case names) that carries data."""
    families = ["codex"] + sorted(
        {name[2 : -len(_USED)] for name in headers if name.startswith("x-") and name.endswith(_USED)} - {"codex"}
    )
    found = (_family(headers, family) for family in families)
    return [limits for limits in found if limits is not None]


def from_event(event: Mapping[str, Any]) -> RateLimits | None:
    """A ``codex.rate_limits`` SSE event, or None when it carries nothing usable."""
    details = event.get("rate_limits")
    details = details if isinstance(details, dict) else {}

    def window(which: str) -> RateLimitWindow | None:
        raw = details.get(which)
        if not isinstance(raw, dict):
            return None
        return _window(raw.get("used_percent"), raw.get("window_minutes"), raw.get("reset_at"))

    credits = None
    raw_credits = event.get("credits")
    if isinstance(raw_credits, dict):
        has, unlimited = _bool(raw_credits.get("has_credits")), _bool(raw_credits.get("unlimited"))
        if has is not None and unlimited is not None:
            balance = raw_credits.get("balance")
            credits = Credits(has, unlimited, str(balance) if balance is not None else None)
    name = event.get("metered_limit_name") or event.get("limit_name")
    plan = event.get("plan_type")
    limits = RateLimits(
        str(name).strip().lower().replace("-", "_") if isinstance(name, str) and name.strip() else "codex",
        None,
        window("primary"),
        window("secondary"),
        credits,
        plan if isinstance(plan, str) else None,
    )
    return limits if (limits.primary or limits.secondary or limits.credits or limits.plan_type) else None
