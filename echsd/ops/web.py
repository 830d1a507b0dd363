"""The web view's logins (``echs web``): asked of the node the client is connected to,
whose ``--web`` listener the link opens."""

from __future__ import annotations

from echsd.ops.base import Op, Where, op


@op(
    "web.login",
    Where.HERE,
    result="`{url, expires_in_s}`: the view's address with a one-time login code in its fragment",
    method="web_login",
    example={},
    example_result={"url": "http://127.0.0.1:8765/#login=Hq3...", "expires_in_s": 120.0},
    notes="The page trades the code (once, within `[tuning] web_login_code_s`) for a session cookie. "
    "A daemon started without `--web`: `unavailable`.",
)
class WebLogin(Op):
    """A one-time login link for the web view (`echs web`)."""


@op(
    "web.revoke",
    Where.HERE,
    result="`{sessions, codes}`: how many sessions and unused login codes ended",
    method="web_revoke",
    example={},
    example_result={"sessions": 2, "codes": 0},
    notes="Open pages lose their live streams at once and must log in again.",
)
class WebRevoke(Op):
    """Ends every web view session and unused login link (`echs web --revoke`)."""
