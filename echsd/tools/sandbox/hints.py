"""Tell the model when a command's failure looks like the sandbox's doing.

A confined command that fails with a permission error (or, network off, a network error)
gets a note naming the sandbox and how to ask for more (``sandbox_permissions:
"require_escalated"`` with a justification), so the model can ask instead of guessing.
Judged from the output's words (a linear scan of what the model sees anyway).
"""

from __future__ import annotations

from echsd.tools.sandbox.policy import SandboxPolicy

FILE_DENIALS = ("Permission denied", "Operation not permitted", "Read-only file system")
NETWORK_DENIALS = (
    "Network is unreachable",
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Connection refused",
    "Address family not supported",
    "Couldn't connect to server",  # curl
    "EAI_AGAIN",  # node and npm: no name resolution
    "ENETUNREACH",
    "ECONNREFUSED",
)


def denial_note(policy: SandboxPolicy | None, exit_code: int | None, output: str) -> str | None:
    if policy is None or not policy.confined or exit_code in (None, 0):
        return None
    words = FILE_DENIALS + (() if policy.network else NETWORK_DENIALS)
    if not any(word in output for word in words):
        return None
    return (
        f"this command ran in the thread's sandbox ({policy.describe()}); the error above may come from it. "
        'If the command needs more, call exec_command again with sandbox_permissions: "require_escalated" and a '
        "justification: a person will be asked to approve running it outside the sandbox."
    )
