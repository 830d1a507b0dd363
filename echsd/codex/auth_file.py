"""Reading and writing Codex's ``$CODEX_HOME/auth.json`` (the ``codex login`` file).

Shape: ``{"OPENAI_API_KEY": ..., "tokens": {"id_token", "access_token", "refresh_token",
"account_id"}, "last_refresh": "<ISO 8601>"}``. Writes are atomic (temp file + rename,
mode 0600) and keep every key we do not know, so a concurrent ``codex`` CLI still reads it.
"""

from __future__ import annotations

import base64
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from echsd.logs import register_secret


class AuthFileError(Exception):
    """auth.json is missing, unreadable or holds no ChatGPT tokens."""


@dataclass(frozen=True)
class Tokens:
    access_token: str
    refresh_token: str
    id_token: str
    account_id: str | None
    last_refresh: datetime | None


def read_tokens(path: Path) -> tuple[Tokens, dict[str, Any]]:
    """The tokens and the whole document (to write back unchanged apart from tokens)."""
    try:
        document = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise AuthFileError(f"{path} not found: run `codex login`") from None
    except OSError as exc:
        raise AuthFileError(f"cannot read {path}: {exc.strerror}") from None
    except orjson.JSONDecodeError:
        raise AuthFileError(f"{path} is not valid JSON") from None
    tokens = document.get("tokens") if isinstance(document, dict) else None
    if not isinstance(tokens, dict) or not isinstance(tokens.get("access_token"), str) or not tokens["access_token"]:
        raise AuthFileError(f"{path} holds no ChatGPT login (run `codex login`)")
    for name in ("access_token", "refresh_token", "id_token"):
        register_secret(tokens.get(name) if isinstance(tokens.get(name), str) else None)
    account_id = tokens.get("account_id")
    if not isinstance(account_id, str) or not account_id:
        account_id = account_id_from_id_token(tokens.get("id_token"))
    return (
        Tokens(
            access_token=tokens["access_token"],
            refresh_token=str(tokens.get("refresh_token") or ""),
            id_token=str(tokens.get("id_token") or ""),
            account_id=account_id,
            last_refresh=_parse_time(document.get("last_refresh")),
        ),
        document,
    )


def write_tokens(path: Path, document: dict[str, Any], tokens: Tokens) -> None:
    """Atomically replace auth.json with ``document`` carrying ``tokens`` (mode 0600)."""
    updated = dict(document)
    stored = dict(updated.get("tokens") or {})
    stored.update(
        access_token=tokens.access_token,
        refresh_token=tokens.refresh_token,
        id_token=tokens.id_token,
    )
    if tokens.account_id:
        stored["account_id"] = tokens.account_id
    updated["tokens"] = stored
    if tokens.last_refresh is not None:
        updated["last_refresh"] = tokens.last_refresh.isoformat().replace("+00:00", "Z")
    data = orjson.dumps(updated, option=orjson.OPT_INDENT_2)
    fd, tmp = tempfile.mkstemp(prefix=".auth.json.", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def jwt_claims(token: str | None) -> dict[str, Any]:
    """The payload of a JWT, read without verifying it (we only need ``exp`` and ids)."""
    if not token or token.count(".") != 2:
        return {}
    payload = token.split(".")[1]
    try:
        claims = orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, orjson.JSONDecodeError):
        return {}
    return claims if isinstance(claims, dict) else {}


def jwt_expiry(token: str | None) -> float | None:
    exp = jwt_claims(token).get("exp")
    return float(exp) if isinstance(exp, (int, float)) and not isinstance(exp, bool) else None


def account_id_from_id_token(id_token: Any) -> str | None:
    auth = jwt_claims(id_token if isinstance(id_token, str) else None).get("https://api.openai.com/auth")
    account = auth.get("chatgpt_account_id") if isinstance(auth, dict) else None
    return account if isinstance(account, str) else None


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
