"""What a compaction keeps and how full a context is (sans-IO).

Compaction replaces the older part of a history (the head) by what the model endpoint
makes of it (``responses/compact``: the user messages plus an opaque compaction item), or,
where the endpoint has no such call, by a summary the model writes; the recent part (the
tail: the last user turns, verbatim) stays as it is. The split is always at a user
message, where every call has its output, so a call is never parted from its output.

How full the context is: the last response's reported tokens (its input plus its output)
plus an estimate, about 4 characters a token, of what was appended since.
"""

from __future__ import annotations

from typing import Any, Sequence

import orjson

from echsd.threads.history import user_message

CHARS_PER_TOKEN = 4
AUTO_KEEP_USER_TURNS = 1  # automatic compaction keeps the last user turn verbatim
SUMMARY_PROMPT = (
    "Your context window is nearly full. Write a summary of the conversation so far that lets you (or "
    "another agent) continue the work without it: the task and its goal, what was done and found (files, "
    "commands, results, decisions), what is left to do, and anything the user asked to keep in mind. Be "
    "complete and concrete; reply with the summary only."
)
SUMMARY_HEADER = "Summary of the earlier conversation (it was compacted to fit the context window):\n\n"


def estimate_tokens(items: Sequence[dict[str, Any]]) -> int:
    return sum(len(orjson.dumps(item)) for item in items) // CHARS_PER_TOKEN


def tail_start(items: Sequence[dict[str, Any]], keep_user_turns: int) -> int:
    """Where the kept tail begins: at the ``keep_user_turns``-th user message from the end
    (the whole history with 0). 0 means there is no head: nothing to compact."""
    if keep_user_turns <= 0:
        return len(items)
    seen = 0
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if item.get("type") == "message" and item.get("role") == "user":
            seen += 1
            if seen == keep_user_turns:
                return index
    return 0


def summary_input(head: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The request that asks the model for a summary of ``head`` (no tools)."""
    return [*head, user_message(SUMMARY_PROMPT)]


def summary_history(summary: str) -> list[dict[str, Any]]:
    """What replaces the head when the model summarised it."""
    return [user_message(SUMMARY_HEADER + summary.strip())]
