"""Inputs waiting for, or joining, a turn; and the acknowledgement a client gets.

An input is stored (and its ``input.queued`` event committed) before it is acknowledged,
so an acknowledged input survives a crash; it is later either delivered into history
(``input.delivered``) or dropped with a reason (``input.dropped``), exactly once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from echsd.store import InputRow, Statement, ops
from echsd.threads.history import user_message
from echsd.threads.state import Disposition, InputMode


@dataclass
class PendingInput:
    input_id: str
    thread_id: str
    text: str
    mode: InputMode
    disposition: Disposition
    client_msg_id: str | None = None
    position: int = 0
    created_at: float = field(default_factory=time.time)
    stored: bool = False  # a row exists already (queued/steering); else it is inserted on use
    attachments: list[dict[str, Any]] = field(default_factory=list)  # files sent with the text

    def item(self) -> dict[str, Any]:
        """The user message: the text, then each attached file (text tagged with its name,
        an image as ``input_image``)."""
        if not self.attachments:
            return user_message(self.text)
        content: list[dict[str, Any]] = [{"type": "input_text", "text": self.text}]
        for attachment in self.attachments:
            if attachment.get("type") == "image":
                content.append({"type": "input_image", "image_url": attachment["image_url"]})
            else:
                body = f'<file name="{attachment.get("name", "")}">\n{attachment.get("text", "")}\n</file>'
                content.append({"type": "input_text", "text": body})
        return {"type": "message", "role": "user", "content": content}

    def row(self, status: str, turn_id: str | None = None, reason: str | None = None) -> InputRow:
        return InputRow(
            input_id=self.input_id,
            thread_id=self.thread_id,
            client_msg_id=self.client_msg_id,
            mode=self.mode.value,
            text=self.text,
            attachments=list(self.attachments),
            status=status,
            position=self.position,
            created_at=self.created_at,
            turn_id=turn_id,
            reason=reason,
            disposition=self.disposition.value,
        )

    def write(self, status: str, turn_id: str | None = None, reason: str | None = None) -> Statement:
        """Insert the row the first time, update its status afterwards."""
        if self.stored:
            return ops.update_input(self.input_id, status=status, turn_id=turn_id, reason=reason)
        self.stored = True
        return ops.insert_input(self.row(status, turn_id, reason))

    def ack(self) -> dict[str, Any]:
        return ack(self.input_id, self.disposition.value, self.thread_id)

    @classmethod
    def from_row(cls, row: InputRow) -> "PendingInput":
        return cls(
            input_id=row.input_id,
            thread_id=row.thread_id,
            text=row.text,
            mode=InputMode(row.mode),
            disposition=Disposition(row.disposition or "queued"),
            client_msg_id=row.client_msg_id,
            position=row.position,
            created_at=row.created_at,
            stored=True,
            attachments=[a for a in row.attachments if isinstance(a, dict)],
        )


def ack(input_id: str, disposition: str, thread_id: str) -> dict[str, Any]:
    return {"input_id": input_id, "disposition": disposition, "thread_id": thread_id}
