"""What goes into ``POST /responses``, decided by the model catalog (pure functions).

The rules, each one a 400 from a real endpoint when broken:

- ``reasoning`` only for a model that reasons, with an effort it accepts; ``summary``
  only where the model has summaries and the organisation may have them (``Fallbacks``);
  ``include: ["reasoning.encrypted_content"]`` only together with ``reasoning``
  ("Encrypted content is not supported with this model").
- ``parallel_tool_calls`` only when ``tools`` is not empty ("'parallel_tool_calls' is
  only allowed when 'tools' are specified").
- ``instructions`` never empty (the ChatGPT backend: "Instructions are required").
- Custom (freeform) tools only for models that have them; elsewhere the same tool is
  offered as a function taking one string, ``input`` (``custom_tool_as_function``), so its
  calls arrive as ``function_call`` items whose arguments are ``{"input": "<raw text>"}``:
  the shape in which a tool runner passes a custom call's input anyway.
- Reasoning items are not resent to a model known not to reason; after an
  ``invalid_encrypted_content`` refusal they are dropped (``strip_reasoning_items``).
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


@dataclass(frozen=True)
class Fallbacks:
    """Request changes learnt from the upstream's refusals (see ``ResponsesClient``)."""

    drop_summary: bool = False  # "Your organization must be verified to generate reasoning summaries"
    strip_reasoning: bool = False  # invalid_encrypted_content: reasoning items of another model


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


def strip_reasoning_items(items: list[Any]) -> tuple[list[Any], int]:
    """``items`` without reasoning items (and how many went): their encrypted content is only
    valid for the model that produced it."""
    kept = [item for item in items if not (isinstance(item, dict) and item.get("type") == "reasoning")]
    return kept, len(items) - len(kept)


def has_encrypted_reasoning(items: list[Any]) -> bool:
    return any(isinstance(i, dict) and i.get("type") == "reasoning" and i.get("encrypted_content") for i in items)


def effort_for(request: ResponsesRequest, info: ModelInfo) -> str | None:
    """The effort to send, or None to send no ``reasoning`` at all."""
    effort = request.reasoning_effort
    if effort is None or not info.reasoning:
        return None
    if effort not in info.efforts:
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
    items = list(request.input)
    if fallbacks.strip_reasoning or (info.known and not info.reasoning):
        items, _ = strip_reasoning_items(items)
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
        if request.reasoning_summary is not None and info.reasoning_summaries and not fallbacks.drop_summary:
            reasoning["summary"] = request.reasoning_summary
        body["reasoning"] = reasoning
        body["include"] = [ENCRYPTED_REASONING]
    if request.prompt_cache_key:
        body["prompt_cache_key"] = request.prompt_cache_key
    return body
