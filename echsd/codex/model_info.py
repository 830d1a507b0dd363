"""What the catalog knows of one model (``ModelInfo``), and what its usage costs.

Every fact carries where it came from (``sources``): a family rule, the shipped table, the
endpoint's model list, or config.toml. Request building trusts a fact by its source: the
efforts a family rule guesses are offered, not enforced (``efforts_checked``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max", "ultra")  # every effort any model takes
SUMMARIES = ("none", "auto", "concise", "detailed")  # reasoning.summary; none: not asked for
VERBOSITIES = ("low", "medium", "high")  # text.verbosity ("none" in a table: not sent)
COMPACT_SHARE = 0.85  # auto-compaction threshold as a share of the context window, unless set
UNKNOWN_CONTEXT_WINDOW = 128_000
DEFAULT_PROMPT = "agent"
FACT_SOURCES = ("shipped", "endpoint", "config")  # checked facts; a family's are rules of thumb


@dataclass(frozen=True)
class Prices:
    """USD per million tokens."""

    input: float
    cached_input: float
    output: float


@dataclass(frozen=True)
class ModelInfo:
    model: str
    reasoning: bool = False
    efforts: tuple[str, ...] = ()
    default_effort: str | None = None
    reasoning_summaries: bool = False  # the model can summarise its reasoning
    summary: str = "none"  # the reasoning.summary asked for by default
    verbosity: str | None = None  # text.verbosity sent; None: not sent
    custom_tools: bool = False
    parallel_tool_calls: bool = False
    context_window: int = UNKNOWN_CONTEXT_WINDOW
    auto_compact_tokens: int | None = None  # None: COMPACT_SHARE of the window
    prices: Prices | None = None
    description: str = ""
    shutdown: str | None = None  # YYYY-MM-DD: the API's shutdown date
    prompt: str = DEFAULT_PROMPT  # the base prompt's file (echsd/codex/prompts/NAME.md)
    prompt_notes: str = ""  # added to that prompt for this model
    family: str | None = None  # the family rule that matched its name
    known: bool = True  # an entry of the catalog: shipped, listed by the endpoint or configured
    listed: bool = False  # the endpoint's model list has it
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)  # fact -> where it came from

    @property
    def compact_at(self) -> int:
        """Tokens in the window past which the thread compacts before the next request."""
        if self.auto_compact_tokens is not None:
            return self.auto_compact_tokens
        return int(self.context_window * COMPACT_SHARE)

    @property
    def efforts_checked(self) -> bool:
        """The efforts are facts (shipped, listed, configured), so others are refused."""
        return self.sources.get("efforts") in FACT_SOURCES

    def source_of(self, fact: str) -> str:
        return self.sources.get(fact, "default")

    def to_dict(self) -> dict[str, Any]:
        """The ``echsd models --json`` shape."""
        return {
            "model": self.model,
            "reasoning": self.reasoning,
            "efforts": list(self.efforts),
            "default_effort": self.default_effort,
            "reasoning_summaries": self.reasoning_summaries,
            "summary": self.summary,
            "verbosity": self.verbosity,
            "custom_tools": self.custom_tools,
            "parallel_tool_calls": self.parallel_tool_calls,
            "context_window": self.context_window,
            "auto_compact_tokens": self.compact_at,
            "prices": None if self.prices is None else {"input": self.prices.input, "cached_input": self.prices.cached_input, "output": self.prices.output},
            "description": self.description,
            "shutdown": self.shutdown,
            "prompt": self.prompt,
            "family": self.family,
            "known": self.known,
            "listed": self.listed,
            "sources": dict(self.sources),
        }


def estimate_cost(info: ModelInfo, *, input_tokens: int, cached_tokens: int, output_tokens: int) -> float | None:
    """USD for one usage record (Responses usage: ``input_tokens`` includes the cached ones,
    ``output_tokens`` includes reasoning); None when the model has no known prices."""
    prices = info.prices
    if prices is None:
        return None
    cached = min(max(cached_tokens, 0), max(input_tokens, 0))
    fresh = max(input_tokens, 0) - cached
    return (fresh * prices.input + cached * prices.cached_input + max(output_tokens, 0) * prices.output) / 1_000_000
