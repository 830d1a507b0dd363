"""Rate-limit headers and ``codex.rate_limits`` events, parsed as Codex parses them."""

from __future__ import annotations

from echsd.codex.ratelimits import Credits, RateLimits, RateLimitWindow, from_event, from_headers


def test_codex_family_windows_and_credits() -> None:
    headers = {
        "x-codex-primary-used-percent": "12.5",
        "x-codex-primary-window-minutes": "300",
        "x-codex-primary-reset-at": "1704069000",
        "x-codex-secondary-used-percent": "80",
        "x-codex-secondary-window-minutes": "10080",
        "x-codex-credits-has-credits": "true",
        "x-codex-credits-unlimited": "0",
        "x-codex-credits-balance": " 9.99 ",
        "content-type": "text/event-stream",
    }
    assert from_headers(headers) == [
        RateLimits(
            "codex",
            None,
            RateLimitWindow(12.5, 300, 1704069000),
            RateLimitWindow(80.0, 10080, None),
            Credits(True, False, "9.99"),
        )
    ]


def test_other_limit_families_and_names() -> None:
    headers = {
        "x-codex-other-primary-used-percent": "80",
        "x-codex-other-primary-window-minutes": "1440",
        "x-codex-other-limit-name": "gpt-5.2-codex-sonic",
    }
    assert from_headers(headers) == [RateLimits("codex_other", "gpt-5.2-codex-sonic", RateLimitWindow(80.0, 1440, None))]


def test_headers_without_data_give_nothing() -> None:
    assert from_headers({}) == []
    assert from_headers({"x-codex-primary-used-percent": "0"}) == []  # zero and no window: no data
    assert from_headers({"x-codex-primary-used-percent": "lots"}) == []
    assert from_headers({"x-codex-credits-has-credits": "maybe", "x-codex-credits-unlimited": "false"}) == []


def test_rate_limits_event() -> None:
    event = {
        "type": "codex.rate_limits",
        "plan_type": "plus",
        "rate_limits": {"primary": {"used_percent": 55.0, "window_minutes": 300, "reset_at": 1704069000}, "secondary": None},
        "credits": {"has_credits": False, "unlimited": False, "balance": None},
        "metered_limit_name": "codex-other",
    }
    limits = from_event(event)
    assert limits == RateLimits("codex_other", None, RateLimitWindow(55.0, 300, 1704069000), None, Credits(False, False, None), "plus")
    assert limits.to_dict()["primary"] == {"used_percent": 55.0, "window_minutes": 300, "resets_at": 1704069000}
    assert from_event({"type": "codex.rate_limits"}) is None
    assert from_event({"type": "codex.rate_limits", "rate_limits": "garbage", "credits": 3}) is None
