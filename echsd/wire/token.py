"""The client token file ``<state>/token`` (mode 0600).

Created once on first start and never overwritten by a restart, so clients keep working
across restarts. ``rotate`` replaces it atomically; the daemon re-reads the file at every
``hello``, so a rotation takes effect for new connections while open ones keep going.
Never log a token.
"""

from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path

from echsd.errors import Unavailable

TOKEN_BYTES = 32


class TokenError(Unavailable):
    """The token file cannot be read or written; the message names the file."""


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def _write_new(path: Path, token: str) -> None:
    """Write ``token`` to a file that must not exist yet, mode 0600 from the start."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, (token + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def ensure_token(path: Path) -> None:
    """Create the token file if it is missing; tighten its mode if it is looser than 0600."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            _write_new(path, new_token())
        except FileExistsError:
            if path.stat().st_mode & 0o077:
                os.chmod(path, 0o600)
    except OSError as exc:
        raise TokenError(f"cannot create the token file {path}: {exc.strerror}") from None


def read_token(path: Path) -> str:
    try:
        token = path.read_text().strip()
    except OSError as exc:
        raise TokenError(f"cannot read the token file {path}: {exc.strerror}") from None
    if not token:
        raise TokenError(f"the token file {path} is empty")
    return token


def rotate_token(path: Path) -> str:
    """Write a fresh token atomically (temp file + rename) and return it."""
    token = new_token()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp.unlink(missing_ok=True)
        _write_new(tmp, token)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise TokenError(f"cannot write the token file {path}: {exc.strerror}") from None
    return token


def token_matches(given: str, expected: str) -> bool:
    """Constant-time comparison (no timing oracle on the token)."""
    return hmac.compare_digest(given.encode(), expected.encode())
