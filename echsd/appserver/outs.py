"""What translating an event can call for (sans-IO): a notification to send, an approval
request to send, or an approval request that ended."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Notify:
    method: str
    params: dict[str, Any]


@dataclass(frozen=True)
class AskApproval:
    """Send this approval request; ``approval_id`` is echsd's request id."""

    approval_id: str
    method: str
    params: dict[str, Any]


@dataclass(frozen=True)
class ApprovalEnded:
    """echsd's approval ``approval_id`` was answered (by anyone), timed out or cancelled."""

    approval_id: str
    decision: str


Out = Notify | AskApproval | ApprovalEnded
