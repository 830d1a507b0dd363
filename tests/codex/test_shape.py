"""Request building follows the catalog: each rule a real endpoint enforces with a 400."""

from __future__ import annotations

from typing import Any

from echsd.codex import ResponsesRequest, custom_tool_as_function, default_catalog
from echsd.codex.shape import FALLBACK_INSTRUCTIONS, Fallbacks, request_body

CATALOG = default_catalog()
TOOL = {"type": "function", "name": "read_file", "description": "read", "parameters": {"type": "object"}, "strict": False}
PATCH = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Edit files.",
    "format": {"type": "grammar", "syntax": "lark", "definition": 'start: "*** Begin Patch"'},
}
REASONING_ITEM = {"type": "reasoning", "summary": [], "encrypted_content": "gAAA-secret"}
USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}


def body(model: str, fallbacks: Fallbacks = Fallbacks(), **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("input", [USER])
    kwargs.setdefault("instructions", "be brief")
    return request_body(ResponsesRequest(model=model, **kwargs), CATALOG.get(model), fallbacks)


def test_reasoning_model_gets_reasoning_summary_and_encrypted_content() -> None:
    sent = body("gpt-5.5", reasoning_effort="high", tools=[TOOL], prompt_cache_key="thr_1")
    assert sent == {
        "model": "gpt-5.5",
        "instructions": "be brief",
        "input": [USER],
        "tools": [TOOL],
        "tool_choice": "auto",
        "store": False,
        "stream": True,
        "parallel_tool_calls": True,
        "reasoning": {"effort": "high", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "thr_1",
    }


def test_non_reasoning_model_gets_neither_reasoning_nor_include() -> None:
    for model in ("gpt-4.1", "gpt-4o", "gpt-5-chat-latest", "gpt-4.1-2025-04-14"):
        sent = body(model, reasoning_effort="medium", input=[USER, REASONING_ITEM])
        assert "reasoning" not in sent and "include" not in sent, model
        assert sent["input"] == [USER]  # reasoning items mean nothing to it


def test_include_only_with_reasoning() -> None:
    assert "include" not in body("gpt-5.5")  # no effort asked: no reasoning, no include
    assert "reasoning" not in body("gpt-5.5", reasoning_effort=None)


def test_unknown_model_gets_the_conservative_request() -> None:
    sent = body("somebody-elses-model", reasoning_effort="high", tools=[TOOL, PATCH])
    assert "reasoning" not in sent and "include" not in sent
    assert sent["parallel_tool_calls"] is False
    assert sent["tools"][1]["type"] == "function"  # no custom tools assumed


def test_parallel_tool_calls_only_with_tools() -> None:
    assert "parallel_tool_calls" not in body("gpt-5.5", reasoning_effort="low")
    assert body("gpt-5.5", tools=[TOOL])["parallel_tool_calls"] is True
    assert body("gpt-5.5", tools=[TOOL], parallel_tool_calls=False)["parallel_tool_calls"] is False
    assert body("o3", tools=[TOOL])["parallel_tool_calls"] is False  # the model has none


def test_summary_only_where_the_model_and_the_organisation_have_it() -> None:
    assert body("gpt-5.5", reasoning_effort="low", reasoning_summary=None)["reasoning"] == {"effort": "low"}
    dropped = body("gpt-5.5", reasoning_effort="low", fallbacks=Fallbacks(drop_summary=True))
    assert dropped["reasoning"] == {"effort": "low"} and dropped["include"] == ["reasoning.encrypted_content"]


def test_effort_the_model_refuses_is_replaced_by_its_default() -> None:
    assert body("gpt-5.1", reasoning_effort="minimal")["reasoning"]["effort"] == "medium"
    assert body("gpt-5", reasoning_effort="minimal")["reasoning"]["effort"] == "minimal"
    assert body("gpt-5.5", reasoning_effort="none")["reasoning"]["effort"] == "none"


def test_instructions_are_never_empty() -> None:
    assert body("gpt-5.5", instructions="")["instructions"] == FALLBACK_INSTRUCTIONS
    assert body("gpt-5.5", instructions=" \n")["instructions"] == FALLBACK_INSTRUCTIONS


def test_custom_tools_kept_where_supported_else_offered_as_functions() -> None:
    assert body("gpt-5.5", tools=[PATCH])["tools"] == [PATCH]
    converted = body("gpt-4.1", tools=[TOOL, PATCH])["tools"]
    assert converted[0] == TOOL and converted[1] == custom_tool_as_function(PATCH)
    function = converted[1]
    assert function["type"] == "function" and function["name"] == "apply_patch"
    assert function["parameters"]["required"] == ["input"] and "*** Begin Patch" in function["description"]
    assert function["parameters"]["properties"].keys() == {"input"} and function["strict"] is False


def test_stripping_reasoning_after_an_encrypted_content_refusal() -> None:
    sent = body("gpt-5.5", reasoning_effort="low", input=[USER, REASONING_ITEM], fallbacks=Fallbacks(strip_reasoning=True))
    assert sent["input"] == [USER] and sent["reasoning"]["effort"] == "low"
