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


def test_reasoning_model_gets_reasoning_verbosity_and_encrypted_content() -> None:
    sent = body("gpt-6.1-sol", reasoning_effort="high", tools=[TOOL], prompt_cache_key="thr_1")
    assert sent == {
        "model": "gpt-6.1-sol",
        "instructions": "be brief",
        "input": [USER],
        "tools": [TOOL],
        "tool_choice": "auto",
        "store": False,
        "stream": True,
        "parallel_tool_calls": True,
        "reasoning": {"effort": "high"},  # Codex 0.169 asks no summary of today's models
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "thr_1",
        "text": {"verbosity": "low"},
    }
    older = body("gpt-5.4", reasoning_effort="high")
    assert older["reasoning"] == {"effort": "high", "summary": "auto"} and "text" not in older


def test_a_model_no_table_describes_is_judged_by_its_family() -> None:
    sent = body("gpt-6.9-test", reasoning_effort="ultra", tools=[TOOL, PATCH])
    assert sent["reasoning"] == {"effort": "ultra"} and sent["include"] == ["reasoning.encrypted_content"]
    assert sent["text"] == {"verbosity": "low"} and sent["tools"][1] == PATCH and sent["parallel_tool_calls"] is True
    assert body("gpt-6.9-test", reasoning_effort="none")["reasoning"] == {"effort": "none"}  # a family's efforts are a guess


def test_reasoning_items_travel_only_in_a_form_the_endpoint_reads() -> None:
    bare = {"type": "reasoning", "summary": []}  # neither id nor encrypted content: refused as invalid_encrypted_content
    with_id = {"type": "reasoning", "id": "rs_1", "summary": []}
    stateless = body("gpt-6.1-sol", reasoning_effort="low", input=[USER, bare, with_id, REASONING_ITEM])
    assert stateless["input"] == [USER, REASONING_ITEM]
    stored = body("gpt-6.1-sol", reasoning_effort="low", input=[USER, bare, with_id, REASONING_ITEM], store=True)
    assert stored["input"] == [USER, with_id, REASONING_ITEM]  # the endpoint has rs_1


def test_non_reasoning_model_gets_neither_reasoning_nor_include() -> None:
    for model in ("gpt-4.1", "gpt-4o", "gpt-4o-mini", "gpt-4.1-2025-04-14"):
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
    other = {"type": "reasoning", "summary": [], "encrypted_content": "gAAA-other"}
    sent = body("gpt-5.5", reasoning_effort="low", input=[USER, REASONING_ITEM, other], fallbacks=Fallbacks(drop_reasoning=frozenset({"gAAA-other"})))
    assert sent["input"] == [USER, REASONING_ITEM] and sent["reasoning"]["effort"] == "low"
    every = body("gpt-5.5", reasoning_effort="low", input=[USER, REASONING_ITEM, other], fallbacks=Fallbacks(drop_reasoning=frozenset({"*"})))
    assert every["input"] == [USER]
