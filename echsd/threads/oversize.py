"""Inputs too large for the model's window (sans-IO): refused at the door, cut down in history.

An input that could not fit the window even after everything else was compacted away (the
window less the prompt and the tools) is refused when it is sent (``input_refusal``): it
never enters the history. A history that already holds more than the window (an input sent
before this rule, a model switched to a smaller window, a huge tool output) is cut down
before the next request (``fit_items``): the largest texts lose their middle, with a note
saying how much went, until the whole fits; compaction then works as usual.

Sizes are estimates, about 4 characters a token, as everywhere else (``compaction.py``).
"""

from __future__ import annotations

from typing import Any, Sequence

import orjson

from echsd.threads.compaction import CHARS_PER_TOKEN

USABLE_SHARE = 0.95  # of the window, for what is sent (the rest is the model's answer)
IMAGE_TOKENS = 1_500  # what an attached image counts, whatever its encoded size
MIN_KEPT_TOKENS = 500  # a cut text keeps at least this much of its head and tail
CUT_NOTE = "\n\n[echsd: {cut:,} characters cut from the middle here: this item was too large for the model's context window]\n\n"


def tokens_of(value: Any) -> int:
    return len(orjson.dumps(value)) // CHARS_PER_TOKEN


def input_tokens(text: str, attachments: Sequence[dict[str, Any]] = ()) -> int:
    """An input's size as the model will count it (images at a flat rate)."""
    size = len(text)
    images = 0
    for attachment in attachments:
        if attachment.get("type") == "image":
            images += 1
        else:
            size += len(str(attachment.get("text") or ""))
    return size // CHARS_PER_TOKEN + images * IMAGE_TOKENS


def input_refusal(model: str, window: int, room: int, size: int) -> str | None:
    """Why an input of ``size`` tokens cannot be sent to ``model``, or None when it fits in
    ``room`` (what the window leaves once the prompt and the tools are counted)."""
    budget = room
    overhead = int(window * USABLE_SHARE) - room
    if size <= budget:
        return None
    return (
        f"input too large for model {model}: about {size:,} tokens, but its context window holds {window:,}, "
        f"of which the prompt and tools take about {overhead:,}: one input may be at most about {max(budget, 0):,} "
        "tokens, even with everything else compacted away. Send it in parts, or a path the model can read it from."
    )


def fit_items(items: Sequence[dict[str, Any]], target: int) -> tuple[list[dict[str, Any]], int] | None:
    """``items`` cut down to about ``target`` tokens, and how many items were cut; None when
    they fit already, or nothing can be cut. The largest texts (messages, tool outputs) lose
    their middle first; items without text (encrypted reasoning) are left as they are."""
    sizes = [tokens_of(item) for item in items]
    total = sum(sizes)
    if total <= target:
        return None
    fitted = list(items)
    cut = 0
    for index in sorted(range(len(items)), key=lambda i: sizes[i], reverse=True):
        if total <= target:
            break
        keep = max(MIN_KEPT_TOKENS, sizes[index] - (total - target))
        if keep >= sizes[index]:
            break  # the largest left is small already: nothing worth cutting
        smaller = _shrunk(items[index], sizes[index] * CHARS_PER_TOKEN - keep * CHARS_PER_TOKEN)
        if smaller is None:
            continue
        fitted[index] = smaller
        total += tokens_of(smaller) - sizes[index]
        cut += 1
    return (fitted, cut) if cut else None


def _shrunk(item: dict[str, Any], less: int) -> dict[str, Any] | None:
    """The item with ``less`` characters fewer, taken from its longest text (keeping at least
    ``MIN_KEPT_TOKENS`` of it); None when it has no text to cut."""
    kind = item.get("type", "message")
    if kind in ("function_call_output", "custom_tool_call_output") and isinstance(item.get("output"), str):
        return {**item, "output": _cut(item["output"], less)}
    if kind == "message" and isinstance(item.get("content"), list):
        parts = item["content"]
        texts = [i for i, part in enumerate(parts) if isinstance(part, dict) and isinstance(part.get("text"), str)]
        if not texts:
            return None
        longest = max(texts, key=lambda i: len(parts[i]["text"]))
        content = list(parts)
        content[longest] = {**parts[longest], "text": _cut(parts[longest]["text"], less)}
        return {**item, "content": content}
    return None


def _cut(text: str, less: int) -> str:
    """``text`` without about ``less`` characters from its middle, the note included."""
    keep = max(MIN_KEPT_TOKENS * CHARS_PER_TOKEN, len(text) - less - len(CUT_NOTE) - 8)
    if keep >= len(text):
        return text
    head = keep // 2
    tail = keep - head
    return text[:head] + CUT_NOTE.format(cut=len(text) - keep) + text[len(text) - tail :]
