"""echsd objects in the app-server protocol's shapes (sans-IO): threads, sessions, models,
config.

A thread's sandbox and approval policy are reported as they are (``sandbox_policy``,
``approval_policy``), and the client's choices map onto echsd's settings
(``echsd_sandbox``, ``echsd_approval``): Codex's ``danger-full-access`` is echsd's
``full-access``, ``untrusted`` its ``on-write``.
"""

from __future__ import annotations

from typing import Any, Mapping

from echsd import __version__
from echsd.appserver.ids import thread_uuid
from echsd.appserver.turns import status_object
from echsd.codex.catalog import ModelCatalog, ModelInfo

CODEX_MODES = {"read-only": "read-only", "workspace-write": "workspace-write", "danger-full-access": "full-access"}
PLAN_TYPES = frozenset({"free", "go", "plus", "pro", "team", "business", "enterprise", "edu", "unknown"})  # the ChatGPT plans both know
EFFORT_TEXT = {
    "none": "No reasoning: fastest answers",
    "minimal": "Minimal reasoning",
    "low": "Fast responses with lighter reasoning",
    "medium": "Balances speed and reasoning depth",
    "high": "Greater reasoning depth for complex problems",
    "xhigh": "Extra high reasoning depth for the hardest problems",
}


def approval_policy(approval: str) -> str:
    """echsd's ``approval`` setting -> ``AskForApproval``."""
    return {"never": "never", "on-request": "on-request"}.get(approval, "untrusted")


def echsd_approval(policy: Any) -> str | None:
    """``AskForApproval`` -> echsd's ``approval`` (None: leave the thread's as it is). The
    granular form asks for escalations and what the rules do not allow: ``on-request``."""
    if policy is None:
        return None
    if isinstance(policy, dict):
        return "on-request"
    return {"never": "never", "on-request": "on-request", "on-failure": "on-request", "untrusted": "on-write"}.get(str(policy), "on-write")


def sandbox_policy(config: Mapping[str, Any]) -> dict[str, Any]:
    """echsd's ``sandbox``, ``network`` and ``writable_roots`` -> ``SandboxPolicy``."""
    mode, network = config.get("sandbox", "workspace-write"), config.get("network") == "on"
    if mode == "full-access":
        return {"type": "dangerFullAccess"} if network else {"type": "externalSandbox", "networkAccess": "restricted"}
    if mode == "read-only":
        return {"type": "readOnly", "networkAccess": network}
    roots = [str(root) for root in config.get("writable_roots") or []]
    return {"type": "workspaceWrite", "writableRoots": roots, "networkAccess": network, "excludeTmpdirEnvVar": False, "excludeSlashTmp": True}


def echsd_sandbox(policy: Any) -> dict[str, Any] | None:
    """``SandboxMode`` (``thread/start``'s ``sandbox``) or ``SandboxPolicy`` -> echsd's config
    keys (None: not given). ValueError for a value neither knows."""
    if policy is None:
        return None
    if isinstance(policy, str):
        if policy not in CODEX_MODES:
            raise ValueError(f"sandbox must be one of {', '.join(CODEX_MODES)} (got {policy!r})")
        return {"sandbox": CODEX_MODES[policy]}
    kind = policy.get("type") if isinstance(policy, dict) else None
    if kind == "dangerFullAccess":
        return {"sandbox": "full-access", "network": "on"}
    if kind == "externalSandbox":
        return {"sandbox": "full-access", "network": "on" if policy.get("networkAccess") == "enabled" else "off"}
    if kind in ("readOnly", "workspaceWrite"):
        keys = {"sandbox": "read-only" if kind == "readOnly" else "workspace-write", "network": "on" if policy.get("networkAccess") else "off"}
        if kind == "workspaceWrite" and policy.get("writableRoots"):
            keys["writable_roots"] = [str(root) for root in policy["writableRoots"]]
        return keys
    raise ValueError(f"sandboxPolicy type must be dangerFullAccess, readOnly, workspaceWrite or externalSandbox (got {kind!r})")


def thread_object(
    thread: Mapping[str, Any],
    *,
    provider: str,
    preview: str = "",
    status: dict[str, Any] | None = None,
    turns: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An echsd thread object -> ``Thread``; its ``thr_`` id is the thread's name."""
    config = thread.get("config") or {}
    created = int(thread.get("created_at") or 0)
    uuid = thread_uuid(str(thread["thread_id"]))
    parent = thread.get("parent")
    return {
        "id": uuid,
        "sessionId": uuid,
        "name": thread["thread_id"],
        "preview": preview,
        "ephemeral": False,
        "modelProvider": provider,
        "model": config.get("model"),
        "reasoningEffort": config.get("reasoning"),
        "createdAt": created,
        "updatedAt": created,
        "status": status or status_object(str(thread.get("state"))),
        "path": None,
        "cwd": config.get("cwd", ""),
        "cliVersion": __version__,
        "source": "cli",
        "parentThreadId": thread_uuid(parent) if isinstance(parent, str) else None,
        "forkedFromId": thread_uuid(thread["forked_from"]) if isinstance(thread.get("forked_from"), str) else None,
        "projectId": None,
        "agentNickname": None,
        "agentRole": thread.get("agent_type"),  # a sub-agent's type (spawn_agent)
        "gitInfo": {"branch": thread["worktree"]["branch"], "sha": None, "originUrl": None} if thread.get("worktree") else None,
        "turns": turns or [],
        "historyMode": "paginated",  # clients page through thread/turns/list and thread/items/list
    }


def session(thread: dict[str, Any], echsd_thread: Mapping[str, Any], provider: str) -> dict[str, Any]:
    """The result of ``thread/start`` and ``thread/resume``."""
    config = echsd_thread.get("config") or {}
    return {
        "thread": thread,
        "model": config.get("model", ""),
        "modelProvider": provider,
        "serviceTier": None,
        "cwd": config.get("cwd", ""),
        "approvalPolicy": approval_policy(str(config.get("approval", "never"))),
        "approvalsReviewer": "user",
        "sandbox": sandbox_policy(config),
        "reasoningEffort": config.get("reasoning"),
    }


def model_list(catalog: ModelCatalog, default_model: str) -> list[dict[str, Any]]:
    """``model/list``: the catalog, the daemon's default model first (and listed even when
    the catalog does not know it). No upgrade or availability notices: the TUI would stop
    on a dialog for them."""
    infos = {info.model: info for info in catalog.models()}
    default = infos.pop(default_model, None) or catalog.get(default_model)
    return [_model(default, catalog, True)] + [_model(info, catalog, False) for info in infos.values()]


def _model(info: ModelInfo, catalog: ModelCatalog, is_default: bool) -> dict[str, Any]:
    efforts = list(info.efforts) if info.reasoning else []
    return {
        "id": info.model,
        "model": info.model,
        "displayName": info.model,
        "description": info.description or ("not in echsd's model catalog" if not info.known else ""),
        "hidden": False,
        "isDefault": is_default,
        "supportedReasoningEfforts": [{"reasoningEffort": e, "description": EFFORT_TEXT.get(e, e)} for e in efforts],
        "defaultReasoningEffort": catalog.default_effort(info.model),
        "inputModalities": ["text"],
        "supportsPersonality": False,
        "upgrade": None,
        "upgradeInfo": None,
        "availabilityNux": None,
    }


def config(catalog: ModelCatalog, default_model: str, provider: str, include_layers: bool, sandbox_mode: str = "workspace-write") -> dict[str, Any]:
    """``config/read``: the daemon's defaults for new threads, in Codex's config keys."""
    info = catalog.get(default_model)
    values = {
        "model": default_model,
        "model_provider": provider,
        "model_reasoning_effort": catalog.default_effort(default_model),
        "model_context_window": info.context_window,
        "approval_policy": "never",
        "sandbox_mode": next(codex for codex, ours in CODEX_MODES.items() if ours == sandbox_mode),
    }
    return {"config": values, "origins": {}, "layers": [] if include_layers else None}


def rate_limits(entry: Mapping[str, Any]) -> dict[str, Any]:
    """One limit family of an ``account.rate_limits`` event -> ``RateLimitSnapshot``."""
    credits = entry.get("credits") if isinstance(entry.get("credits"), dict) else None
    return {
        "limitId": entry.get("limit_id"),
        "limitName": entry.get("limit_name"),
        "primary": _window(entry.get("primary")),
        "secondary": _window(entry.get("secondary")),
        "credits": None
        if credits is None
        else {"hasCredits": bool(credits.get("has_credits")), "unlimited": bool(credits.get("unlimited")), "balance": credits.get("balance")},
        "planType": entry.get("plan_type") if entry.get("plan_type") in PLAN_TYPES else None,
    }


def _window(window: Any) -> dict[str, Any] | None:
    if not isinstance(window, dict) or not isinstance(window.get("used_percent"), (int, float)):
        return None
    return {"usedPercent": round(window["used_percent"]), "windowDurationMins": window.get("window_minutes"), "resetsAt": window.get("resets_at")}
