"""The method table: every request the listener answers, and what it answers with.

Threads and turns are echsd's (``thread_methods``, ``turn_methods``). The rest of what
the Codex TUI asks at start-up is answered from the daemon's settings and model catalog,
or, for what echsd has no notion of (accounts, hooks, skills, plugins, goals), with the
empty answer the protocol allows. A method not in this table gets a quick
``-32601 ... is not supported by echsd`` error, never silence: the TUI waits on its
requests without a timeout.
"""

from __future__ import annotations

import sys
from typing import Any

from echsd import __version__
from echsd.appserver import shapes, thread_methods, turn_methods
from echsd.appserver.mcp_status import mcp_server_status_list
from echsd.appserver.connection import Connection, Handler
from echsd.appserver.framing import INVALID_REQUEST, Request, RpcError
from echsd.ops.daemon import Status


def initialize(conn: Connection, request: Request) -> dict[str, Any]:
    if conn.initialized:
        raise RpcError(INVALID_REQUEST, "already initialized")
    capabilities = request.params.get("capabilities") or {}
    opted_out = capabilities.get("optOutNotificationMethods") if isinstance(capabilities, dict) else None
    conn.opted_out = frozenset(m for m in opted_out or () if isinstance(m, str))
    conn.initialized = True
    return {
        "userAgent": f"echsd/{__version__}",
        "codexHome": str(conn.settings.codex_home),
        "platformFamily": "windows" if sys.platform == "win32" else "unix",
        "platformOs": {"darwin": "macos", "win32": "windows"}.get(sys.platform, sys.platform),
    }


def account_read(conn: Connection, request: Request) -> dict[str, Any]:
    return {"account": None, "requiresOpenaiAuth": False}  # the daemon holds the credentials


def model_list(conn: Connection, request: Request) -> dict[str, Any]:
    return {"data": shapes.model_list(conn.settings.catalog, conn.settings.model), "nextCursor": None}


async def rate_limits_read(conn: Connection, request: Request) -> dict[str, Any]:
    """The account's rate limits as the endpoint last reported them (ChatGPT plans)."""
    snapshot = (await conn.run_op(Status())).get("rate_limits") or {}
    limits = [shapes.rate_limits(entry) for entry in snapshot.get("limits") or () if isinstance(entry, dict)]
    if not limits:
        raise RpcError(INVALID_REQUEST, "no rate limits known yet: the model endpoint reports them with its answers (ChatGPT plans only)")
    by_id = {limit["limitId"]: limit for limit in limits if limit["limitId"]}
    main = by_id.get("codex") or limits[0]
    return {"rateLimits": main, "rateLimitsByLimitId": by_id or None}


def config_read(conn: Connection, request: Request) -> dict[str, Any]:
    settings = conn.settings
    return shapes.config(settings.catalog, settings.model, settings.provider, bool(request.params.get("includeLayers")), settings.sandbox_mode)


def config_requirements_read(conn: Connection, request: Request) -> dict[str, Any]:
    return {"requirements": None}


def _per_cwd(request: Request, **empty: list[Any]) -> dict[str, Any]:
    cwds = request.params.get("cwds") or []
    return {"data": [{"cwd": cwd, **empty} for cwd in cwds if isinstance(cwd, str)]}


def hooks_list(conn: Connection, request: Request) -> dict[str, Any]:
    return _per_cwd(request, hooks=[], warnings=[], errors=[])


def skills_list(conn: Connection, request: Request) -> dict[str, Any]:
    return _per_cwd(request, skills=[], errors=[])


def plugin_installed(conn: Connection, request: Request) -> dict[str, Any]:
    return {"marketplaces": [], "marketplaceLoadErrors": []}


METHODS: dict[str, Handler] = {
    "initialize": initialize,
    "account/read": account_read,
    "model/list": model_list,
    "account/rateLimits/read": rate_limits_read,
    "config/read": config_read,
    "configRequirements/read": config_requirements_read,
    "hooks/list": hooks_list,
    "skills/list": skills_list,
    "plugin/installed": plugin_installed,
    "mcpServerStatus/list": mcp_server_status_list,
    **thread_methods.METHODS,
    **turn_methods.METHODS,
}
