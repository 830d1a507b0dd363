"""What goes into ``POST /responses``, decided by the model catalog (pure functions).

The rules, each one a 400 from a real endpoint when broken:

- ``reasoning`` only for a model that reasons, with an effort it accepts; ``summary``
  only where the model has summaries, its catalog entry asks for them (Codex 0.169 asks
  none for its current models) and the endpoint has not refused them (``Fallbacks``);
  ``include: ["reasoning.encrypted_content"]`` only together with ``reasoning``
  ("Encrypted content is not supported with this model").
- ``text.verbosity`` only where the catalog gives the model one.
- ``parallel_tool_calls`` only when ``tools`` is not empty ("'parallel_tool_calls' is
  only allowed when 'tools' are specified").
- ``instructions`` never empty (the ChatGPT backend: "Instructions are required").
- Custom (freeform) tools only for models that have them; elsewhere the same tool is
  offered as a function taking one string, ``input`` (``custom_tool_as_function``), so its
  calls arrive as ``function_call`` items whose arguments are ``{"input": "<raw text>"}``:
  the shape in which a tool runner passes a custom call's input anyway.
- Reasoning items travel only in a form the endpoint can read: with ``store: false``
  only those carrying ``encrypted_content`` (one without is refused as
  ``invalid_encrypted_content``, and would be resent by every later request), with
  ``store: true`` those with an id or encrypted content; none to a model known not to
  reason. After a refusal that names reasoning items, those are left out
  (``Fallbacks.drop_reasoning``: the ids named, or all of them).
"""


from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from echsd.codex.catalog import ModelInfo
from echsd.logs import get_logger

if TYPE_CHECKING:
    from echsd.codex.request import ResponsesRequest

log = get_logger(__name__)

FALLBACK_INSTRUCTIONS = "You are a helpful assistant."
ENCRYPTED_REASONING = "reasoning.encrypted_content"
CUSTOM_INPUT_FIELD = "input"


ALL_REASONING: frozenset[str] = frozenset({"*"})  # drop_reasoning: every reasoning item


@dataclass(frozen=True)
class Fallbacks:
    """Request changes learnt from the upstream's refusals (see ``ResponsesClient``)."""

    drop_summary: bool = False  # "Your organization must be verified to generate reasoning summaries"
    drop_reasoning: frozenset[str] = frozenset()  # ``item_key``s of refused reasoning items (ALL_REASONING: all)


def custom_tool_as_function(spec: dict[str, Any]) -> dict[str, Any]:
    """A ``{"type": "custom", ...}`` tool as a function tool with one string argument ``input``."""
    description = spec.get("description") or f"The {spec.get('name')} tool."
    grammar = spec.get("format")
    if isinstance(grammar, dict) and grammar.get("type") == "grammar" and isinstance(grammar.get("definition"), str):
        description += f"\n\nThe input must follow this {grammar.get('syntax', 'grammar')} grammar:\n{grammar['definition']}"
    return {
        "type": "function",
        "name": spec.get("name"),
        "description": description,
        "strict": False,
        "parameters": {
            "type": "object",
            "properties": {CUSTOM_INPUT_FIELD: {"type": "string", "description": "The tool's whole input, verbatim."}},
            "required": [CUSTOM_INPUT_FIELD],
            "additionalProperties": False,
        },
    }


def tools_for(tools: list[dict[str, Any]], info: ModelInfo) -> list[dict[str, Any]]:
    if info.custom_tools:
        return list(tools)
    return [custom_tool_as_function(t) if t.get("type") == "custom" else t for t in tools]


def is_reasoning(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "reasoning"


def item_key(item: dict[str, Any]) -> str:
    """What names a reasoning item across requests: its id, else its encrypted content."""
    return str(item.get("id") or item.get("encrypted_content") or "")


def strip_reasoning_items(items: list[Any], keys: frozenset[str] = ALL_REASONING) -> tuple[list[Any], int]:
    """``items`` without the reasoning items whose ``item_key`` is in ``keys`` (``ALL_REASONING``:
    all of them), and how many went: encrypted reasoning is only readable by the model (and
    the account) that produced it."""
    kept = [item for item in items if not (is_reasoning(item) and ("*" in keys or item_key(item) in keys))]
    return kept, len(items) - len(kept)


def sendable(item: Any, store: bool) -> bool:
    """Whether the endpoint can read this item back: a reasoning item needs its encrypted
    content (or, with ``store``, its id on the endpoint)."""
    if not is_reasoning(item):
        return True
    if isinstance(item.get("encrypted_content"), str) and item["encrypted_content"]:
        return True
    return store and isinstance(item.get("id"), str) and bool(item["id"])


def effort_for(request: ResponsesRequest, info: ModelInfo) -> str | None:
    """The effort to send, or None to send no ``reasoning`` at all. An effort a family rule
    only guesses at is sent as asked; one the catalog knows the model refuses becomes its default."""
    effort = request.reasoning_effort
    if effort is None or not info.reasoning:
        return None
    if effort not in info.efforts and info.efforts_checked:
        log.warning(
            "reasoning effort not accepted by the model; using its default",
            model=info.model,
            effort=effort,
            default=info.default_effort,
        )
        return info.default_effort
    return effort


def request_body(request: ResponsesRequest, info: ModelInfo, fallbacks: Fallbacks = Fallbacks()) -> dict[str, Any]:
    """The JSON body of ``POST /responses``.

    Stateless by default (``store: false``): the daemon owns the history and resends it
    each time, so reasoning must travel as ``encrypted_content``. A thread with ``chain``
    asks for ``store: true`` and then sends ``previous_response_id`` with only the new items.
    """
    items = [item for item in request.input if sendable(item, request.store)]
    if info.known and not info.reasoning:
        items, _ = strip_reasoning_items(items)
    elif fallbacks.drop_reasoning:
        items, _ = strip_reasoning_items(items, fallbacks.drop_reasoning)
    tools = tools_for(request.tools, info)
    body: dict[str, Any] = {
        "model": request.model,
        "instructions": request.instructions if request.instructions.strip() else FALLBACK_INSTRUCTIONS,
        "input": items,
        "tools": tools,
        "tool_choice": "auto",
        "store": request.store,
        "stream": True,
    }
    if request.previous_response_id:
        body["previous_response_id"] = request.previous_response_id
    if tools:
        body["parallel_tool_calls"] = bool(request.parallel_tool_calls and info.parallel_tool_calls)
    effort = effort_for(request, info)
    if effort is not None:
        reasoning: dict[str, str] = {"effort": effort}
        summary = request.reasoning_summary or info.summary
        if summary != "none" and info.reasoning_summaries and not fallbacks.drop_summary:
            reasoning["summary"] = summary
        body["reasoning"] = reasoning
        body["include"] = [ENCRYPTED_REASONING]
    if request.prompt_cache_key:
        body["prompt_cache_key"] = request.prompt_cache_key
    verbosity = request.verbosity or info.verbosity
    if verbosity:
        body["text"] = {"verbosity": verbosity}
    return body
