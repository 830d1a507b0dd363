"""Sending input so that a slow daemon never gets it twice (``echs send``).

Every input carries a ``client_msg_id`` (``--id``, or one made here), and the daemon never
delivers a repeated one twice (CONTRACT.md 2.2). So when the acknowledgement does not come
in time (the daemon's database is locked, the machine is swapping) the input may or may not
have arrived, and sending it again with the same id is safe: the answer is the first one's
acknowledgement, or a fresh one. After ``ATTEMPTS`` tries we stop and say that the input
may have been accepted, and how to find out without sending it twice.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any, Callable

from echsd.cli.echs_runtime import Refusal

if TYPE_CHECKING:
    from echsd.wire.client import Client

ATTEMPTS = 3


def new_msg_id() -> str:
    """An idempotency key for an input sent without ``--id``."""
    return "echs-" + secrets.token_hex(8)


def unanswered(code: str, message: str) -> bool:
    """Whether a failed request may still have reached the daemon (and been acted on)."""
    return code in ("timeout", "connection_lost") or (code == "unavailable" and "did not answer" in message)


async def send_acknowledged(
    client: Client, attempt_s: float, note: Callable[[str], None], thread_id: str, text: str, *, client_msg_id: str, **params: Any
) -> dict[str, Any]:
    """``thread.send`` with ``client_msg_id``, tried again (same id) while unanswered."""
    from echsd.wire.errors import WireError

    reason = ""
    for attempt in range(1, ATTEMPTS + 1):
        if attempt > 1:
            note(f"no acknowledgement yet ({reason}); sending again with the same id {client_msg_id} ({attempt}/{ATTEMPTS}), which is never delivered twice")
        try:
            if not client.connected:
                await client.reconnect(timeout=attempt_s)
        except WireError as exc:  # the daemon went away, perhaps with our input
            reason = exc.message
            continue
        try:
            return await _send_once(client, attempt_s, thread_id, text, client_msg_id=client_msg_id, **params)
        except WireError as exc:
            if not unanswered(exc.code, exc.message):
                raise  # an answer (a refusal): nothing to try again
            reason = exc.message
    raise Refusal(
        f"the daemon did not acknowledge the input in {ATTEMPTS} tries of {attempt_s:g} s each ({reason}); it may have been "
        f"accepted all the same. To find out without sending it twice, repeat the command with `--id {client_msg_id}` (a "
        f"repeat is only acknowledged again), or look for it in `echs history {thread_id}`; --timeout SECONDS waits longer"
    )


async def _send_once(client: Client, attempt_s: float, thread_id: str, text: str, **params: Any) -> dict[str, Any]:
    """One try: the blocking client gives up after its socket timeout; the async one here."""
    from echsd.wire.blocking import BlockingClient

    if isinstance(client, BlockingClient):
        ack: dict[str, Any] = await client.send(thread_id, text, **params)
        return ack
    import trio

    from echsd.wire.errors import WireError

    with trio.move_on_after(attempt_s):
        ack = await client.send(thread_id, text, **params)
        return ack
    raise WireError("unavailable", f"the daemon did not answer within {attempt_s:g} s")
