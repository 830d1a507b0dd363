"""The request the thread runtime hands to ``ResponsesClient.stream``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ResponsesRequest:
    model: str
    instructions: str
    input: list[dict]
    tools: list[dict] = field(default_factory=list)
    parallel_tool_calls: bool = True
    reasoning_effort: str | None = None  # none|minimal|low|medium|high|xhigh; None omits "reasoning"
    reasoning_summary: str | None = "auto"
    prompt_cache_key: str | None = None

    def body(self) -> dict[str, Any]:
        """The JSON body of ``POST /responses``.

        Stateless on purpose (``store: false``): the daemon owns the history and resends it
        each time, so reasoning must travel as ``encrypted_content``.
        """
        body: dict[str, Any] = {
            "model": self.model,
            "instructions": self.instructions,
            "input": self.input,
            "tools": self.tools,
            "tool_choice": "auto",
            "parallel_tool_calls": self.parallel_tool_calls,
            "store": False,
            "stream": True,
            "include": ["reasoning.encrypted_content"],
        }
        if self.reasoning_effort is not None:
            reasoning: dict[str, str] = {"effort": self.reasoning_effort}
            if self.reasoning_summary is not None:
                reasoning["summary"] = self.reasoning_summary
            body["reasoning"] = reasoning
        if self.prompt_cache_key:
            body["prompt_cache_key"] = self.prompt_cache_key
        return body
