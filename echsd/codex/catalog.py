"""The model catalog: per model, what a request may contain, how big the window is, what it costs.

The shipped table (``models.toml`` beside this module) is merged field by field with the
``[models."NAME"]`` tables of ``config.toml``. Request building (``echsd.codex.shape``)
reads a ``ModelInfo`` instead of assuming; the thread runtime validates efforts with
``validate_effort`` and prices usage with ``estimate_cost``. A model found nowhere gets
conservative defaults (no reasoning parameters, no custom tools, a 128k window) and one
warning per process, so a typo or a new model still works and says why it behaves plainly.
Dated snapshots (``gpt-4.1-2025-04-14``) inherit from their base model.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Any, Iterable, Mapping

from echsd.errors import BadRequest
from echsd.logs import get_logger

log = get_logger(__name__)

REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")  # every effort any model takes

COMPACT_SHARE = 0.85  # auto-compaction threshold as a share of the context window, unless set
UNKNOWN_CONTEXT_WINDOW = 128_000
_DATED = re.compile(r"-\d{4}-\d{2}-\d{2}$")
_BOOL_FIELDS = ("reasoning", "reasoning_summaries", "custom_tools", "parallel_tool_calls")
_PRICE_FIELDS = ("input_price", "cached_input_price", "output_price")
FIELDS = frozenset(
    {*_BOOL_FIELDS, *_PRICE_FIELDS, "efforts", "default_effort", "context_window", "auto_compact_tokens", "description"}
)


class CatalogError(ValueError):
    """An invalid catalog entry; the message names the model and the field."""


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
    reasoning_summaries: bool = False
    custom_tools: bool = False
    parallel_tool_calls: bool = False
    context_window: int = UNKNOWN_CONTEXT_WINDOW
    auto_compact_tokens: int | None = None  # None: COMPACT_SHARE of the window
    prices: Prices | None = None
    description: str = ""
    known: bool = True  # False: not in the catalog, these are the conservative defaults

    @property
    def compact_at(self) -> int:
        """Tokens in the window past which the thread compacts before the next request."""
        if self.auto_compact_tokens is not None:
            return self.auto_compact_tokens
        return int(self.context_window * COMPACT_SHARE)

    def to_dict(self) -> dict[str, Any]:
        """The ``echsd models --json`` shape."""
        data = asdict(self)
        data["efforts"] = list(self.efforts)
        data["auto_compact_tokens"] = self.compact_at
        return data


def estimate_cost(info: ModelInfo, *, input_tokens: int, cached_tokens: int, output_tokens: int) -> float | None:
    """USD for one usage record (Responses usage: ``input_tokens`` includes the cached ones,
    ``output_tokens`` includes reasoning); None when the model has no known prices."""
    prices = info.prices
    if prices is None:
        return None
    cached = min(max(cached_tokens, 0), max(input_tokens, 0))
    fresh = max(input_tokens, 0) - cached
    return (fresh * prices.input + cached * prices.cached_input + max(output_tokens, 0) * prices.output) / 1_000_000


class ModelCatalog:
    def __init__(self, models: Iterable[ModelInfo], *, sources: Mapping[str, str] | None = None) -> None:
        self._models = {info.model: info for info in models}
        self._sources = dict(sources or {})
        self._warned: set[str] = set()

    def __contains__(self, model: str) -> bool:
        return self.lookup(model) is not None

    def models(self) -> list[ModelInfo]:
        return [self._models[name] for name in sorted(self._models)]

    def source(self, model: str) -> str:
        """Where an entry came from: ``shipped``, ``config`` or ``shipped+config``."""
        return self._sources.get(model, "shipped")

    def lookup(self, model: str) -> ModelInfo | None:
        """The catalog entry (a dated snapshot resolves to its base model), or None."""
        info = self._models.get(model)
        if info is None and _DATED.search(model):
            base = self._models.get(_DATED.sub("", model))
            info = replace(base, model=model) if base is not None else None
        return info

    def get(self, model: str) -> ModelInfo:
        """The entry, or conservative defaults for a model the catalog does not know."""
        info = self.lookup(model)
        if info is not None:
            return info
        if model not in self._warned:
            self._warned.add(model)
            log.warning(
                "model not in the catalog: requests carry no reasoning parameters and assume a 128k window; "
                'describe it in config.toml as [models."NAME"]',
                model=model,
            )
        return ModelInfo(model=model, known=False)

    def default_effort(self, model: str) -> str:
        """The effort a new thread on ``model`` gets when none is asked for."""
        info = self.get(model)
        if info.reasoning and info.default_effort:
            return info.default_effort
        return "none" if info.known else "medium"

    def validate_effort(self, model: str, effort: Any) -> str:
        """``effort`` if ``model`` accepts it, else ``BadRequest`` saying what it accepts.

        A model outside the catalog accepts any effort of the contract's list (its requests
        carry no ``reasoning`` anyway); a known model without reasoning accepts only ``none``.
        """
        if effort not in REASONING_EFFORTS:
            raise BadRequest(f"reasoning must be one of {', '.join(REASONING_EFFORTS)} (got {effort!r})")
        info = self.get(model)
        if not info.known:
            return str(effort)
        if not info.reasoning:
            if effort != "none":
                raise BadRequest(f"model {model} does not reason: reasoning must be 'none' (got {effort!r})")
            return str(effort)
        if effort not in info.efforts:
            raise BadRequest(
                f"model {model} accepts reasoning {', '.join(info.efforts)} (got {effort!r})"
            )
        return str(effort)

    def estimate_cost(self, model: str, *, input_tokens: int, cached_tokens: int, output_tokens: int) -> float | None:
        info = self.get(model)
        return estimate_cost(info, input_tokens=input_tokens, cached_tokens=cached_tokens, output_tokens=output_tokens)


# ---------------------------------------------------------------- building from tables


def _entry(name: str, table: Any, base: ModelInfo, where: str) -> ModelInfo:
    """``base`` with the fields of one ``[models."NAME"]`` table applied (validated)."""
    if not isinstance(table, dict):
        raise CatalogError(f"{where}: models.{name!r} must be a table")
    unknown = sorted(set(table) - FIELDS)
    if unknown:
        raise CatalogError(f"{where}: unknown field models.{name!r}.{unknown[0]} (known: {', '.join(sorted(FIELDS))})")

    def bad(field: str, expected: str) -> CatalogError:
        return CatalogError(f"{where}: models.{name!r}.{field} must be {expected} (got {table[field]!r})")

    values: dict[str, Any] = {}
    for field in _BOOL_FIELDS:
        if field in table:
            if not isinstance(table[field], bool):
                raise bad(field, "true or false")
            values[field] = table[field]
    if "efforts" in table:
        efforts = table["efforts"]
        if not isinstance(efforts, list) or not all(e in REASONING_EFFORTS for e in efforts):
            raise bad("efforts", f"a list of {', '.join(REASONING_EFFORTS)}")
        values["efforts"] = tuple(dict.fromkeys(efforts))
        if "default_effort" not in table and base.default_effort not in values["efforts"]:
            values["default_effort"] = None  # inherited default no longer offered: pick again
    if "default_effort" in table:
        if table["default_effort"] not in REASONING_EFFORTS:
            raise bad("default_effort", f"one of {', '.join(REASONING_EFFORTS)}")
        values["default_effort"] = table["default_effort"]
    for field in ("context_window", "auto_compact_tokens"):
        if field in table:
            value = table[field]
            if type(value) is not int or value <= 0:
                raise bad(field, "a positive number of tokens")
            values[field] = value
    if "description" in table:
        if not isinstance(table["description"], str):
            raise bad("description", "a string")
        values["description"] = table["description"]
    prices = asdict(base.prices) if base.prices else {}
    for field in _PRICE_FIELDS:
        if field in table:
            value = table[field]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise bad(field, "a non-negative number (USD per million tokens)")
            prices[field.removesuffix("_price")] = float(value)
    if prices:
        if len(prices) != 3:
            missing = sorted(f"{k}_price" for k in ("input", "cached_input", "output") if k not in prices)
            raise CatalogError(f"{where}: models.{name!r} sets some prices but not {', '.join(missing)}")
        values["prices"] = Prices(**prices)
    info = replace(base, model=name, known=True, **values)
    return _checked(info, where)


def _checked(info: ModelInfo, where: str) -> ModelInfo:
    name = info.model
    if info.reasoning and not info.efforts:
        raise CatalogError(f"{where}: models.{name!r} reasons but lists no efforts")
    if not info.reasoning:
        info = replace(info, efforts=(), default_effort=None, reasoning_summaries=False)
    elif info.default_effort is None or info.default_effort not in info.efforts:
        if info.default_effort is not None:
            raise CatalogError(
                f"{where}: models.{name!r}.default_effort {info.default_effort!r} "
                f"is not in its efforts ({', '.join(info.efforts)})"
            )
        info = replace(info, default_effort="medium" if "medium" in info.efforts else info.efforts[0])
    if info.auto_compact_tokens is not None and info.auto_compact_tokens > info.context_window:
        raise CatalogError(f"{where}: models.{name!r}.auto_compact_tokens is larger than its context_window")
    return info


def build_catalog(
    shipped: Mapping[str, Any], overrides: Mapping[str, Any] | None = None, *, where: str = "config.toml"
) -> ModelCatalog:
    """The shipped tables with ``overrides`` (the config file's ``models`` table) merged in."""
    models: dict[str, ModelInfo] = {}
    sources: dict[str, str] = {}
    for name, table in shipped.items():
        models[name] = _entry(name, table, ModelInfo(model=name), "the shipped catalog")
        sources[name] = "shipped"
    if overrides is not None and not isinstance(overrides, dict):
        raise CatalogError(f"{where}: 'models' must be a table of [models.\"NAME\"] tables")
    for name, table in (overrides or {}).items():
        base = models.get(name) or ModelInfo(model=name)
        models[name] = _entry(name, table, base, where)
        sources[name] = "shipped+config" if name in sources else "config"
    return ModelCatalog(models.values(), sources=sources)


@lru_cache(maxsize=1)
def shipped_tables() -> dict[str, Any]:
    text = resources.files("echsd.codex").joinpath("models.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)["models"]


@lru_cache(maxsize=1)
def default_catalog() -> ModelCatalog:
    """The shipped catalog alone (the mock upstream, and clients built without settings)."""
    return build_catalog(shipped_tables())


def load_catalog(overrides: Mapping[str, Any] | None, *, where: str = "config.toml") -> ModelCatalog:
    return build_catalog(shipped_tables(), overrides, where=where)
