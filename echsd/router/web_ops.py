"""Node handlers of ``web.login`` and ``web.revoke``: this node's web view listener."""

from __future__ import annotations

from typing import Any

from echsd.errors import Unavailable
from echsd.ops.web import WebLogin, WebRevoke
from echsd.router.handlers import answers
from echsd.router.node import LocalNode, WebLogins

NO_WEB = "this daemon serves no web view: start it with --web tcp://127.0.0.1:PORT (or ECHS_WEB)"


def _web(node: LocalNode) -> WebLogins:
    if node.web is None:
        raise Unavailable(NO_WEB)
    return node.web


@answers(WebLogin)
async def web_login(node: LocalNode, op: WebLogin) -> dict[str, Any]:
    return _web(node).login()


@answers(WebRevoke)
async def web_revoke(node: LocalNode, op: WebRevoke) -> dict[str, int]:
    return _web(node).revoke()
