"""Catalog tables (pure): validating one ``[models."NAME"]`` or family table, and merging
layers of them into a ``ModelInfo``.

A layer is what one source says of a model: a family rule, the shipped table, the
endpoint's model list, config.toml. Layers merge field by field, later ones winning, and
each fact remembers its layer. Prices are three fields that only exist together; efforts
and the default effort are checked together after the merge (a default that a later layer's
efforts no longer offer is picked again, unless that layer set it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date
from fnmatch import fnmatchcase
from importlib import resources
from typing import Any, Iterable, Mapping, Sequence

from echsd.codex.model_info import REASONING_EFFORTS, SUMMARIES, VERBOSITIES, ModelInfo, Prices

BOOL_FIELDS = ("reasoning", "reasoning_summaries", "custom_tools", "parallel_tool_calls")
PRICE_FIELDS = ("input_price", "cached_input_price", "output_price")
TEXT_FIELDS = ("description", "prompt_notes")
FIELDS = frozenset(
    {*BOOL_FIELDS, *PRICE_FIELDS, *TEXT_FIELDS, "efforts", "default_effort", "summary", "verbosity"}
    | {"context_window", "auto_compact_tokens", "shutdown", "prompt"}
)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_PROMPT_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")


class CatalogError(ValueError):
    """An invalid catalog entry; the message names where, the model and the field."""


@dataclass(frozen=True)
class Layer:
    source: str  # "family gpt-6", "shipped", "endpoint", "config"
    where: str  # for errors: "the shipped catalog", the config file's path
    values: Mapping[str, Any]


@dataclass(frozen=True)
class Family:
    name: str
    globs: tuple[str, ...]
    values: Mapping[str, Any]

    def matches(self, model: str) -> bool:
        return any(fnmatchcase(model, glob) for glob in self.globs)


def prompt_exists(name: str) -> bool:
    return bool(_PROMPT_NAME.fullmatch(name)) and resources.files("echsd.codex").joinpath("prompts", f"{name}.md").is_file()


def parse_table(name: str, table: Any, where: str, *, kind: str = "models") -> dict[str, Any]:
    """The validated fields of one table (nothing merged yet)."""
    label = f"{kind}.{name!r}"
    if not isinstance(table, Mapping):
        raise CatalogError(f"{where}: {label} must be a table")
    unknown = sorted(set(table) - FIELDS - ({"match"} if kind == "families" else set()))
    if unknown:
        raise CatalogError(f"{where}: unknown field {label}.{unknown[0]} (known: {', '.join(sorted(FIELDS))})")

    def bad(field: str, expected: str) -> CatalogError:
        return CatalogError(f"{where}: {label}.{field} must be {expected} (got {table[field]!r})")

    values: dict[str, Any] = {}
    for field in BOOL_FIELDS:
        if field in table:
            if not isinstance(table[field], bool):
                raise bad(field, "true or false")
            values[field] = table[field]
    if "efforts" in table:
        efforts = table["efforts"]
        if not isinstance(efforts, list) or not efforts or not all(e in REASONING_EFFORTS for e in efforts):
            raise bad("efforts", f"a list of {', '.join(REASONING_EFFORTS)}")
        values["efforts"] = tuple(dict.fromkeys(efforts))
    for field, allowed in (("default_effort", REASONING_EFFORTS), ("summary", SUMMARIES), ("verbosity", ("none", *VERBOSITIES))):
        if field in table:
            if table[field] not in allowed:
                raise bad(field, f"one of {', '.join(allowed)}")
            values[field] = None if field == "verbosity" and table[field] == "none" else table[field]
    for field in ("context_window", "auto_compact_tokens"):
        if field in table:
            if type(table[field]) is not int or table[field] <= 0:
                raise bad(field, "a positive number of tokens")
            values[field] = table[field]
    for field in TEXT_FIELDS:
        if field in table:
            if not isinstance(table[field], str):
                raise bad(field, "a string")
            values[field] = table[field]
    if "shutdown" in table:
        if not isinstance(table["shutdown"], str) or not _DATE.fullmatch(table["shutdown"]):
            raise bad("shutdown", "a date YYYY-MM-DD")
        values["shutdown"] = table["shutdown"]
    if "prompt" in table:
        if not isinstance(table["prompt"], str) or not prompt_exists(table["prompt"]):
            raise bad("prompt", "the name of a prompt in echsd/codex/prompts (without .md)")
        values["prompt"] = table["prompt"]
    for field in PRICE_FIELDS:
        if field in table:
            value = table[field]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise bad(field, "a non-negative number (USD per million tokens)")
            values[field] = float(value)
    return values


def parse_families(table: Any, where: str) -> list[Family]:
    if not isinstance(table, Mapping):
        raise CatalogError(f"{where}: 'families' must be a table of [families.NAME] tables")
    families = []
    for name, rules in table.items():
        globs = rules.get("match") if isinstance(rules, Mapping) else None
        if not isinstance(globs, list) or not globs or not all(isinstance(glob, str) and glob for glob in globs):
            raise CatalogError(f"{where}: families.{name!r}.match must be a list of name patterns")
        families.append(Family(name, tuple(globs), parse_table(name, rules, where, kind="families")))
    return families


def family_of(model: str, families: Sequence[Family]) -> Family | None:
    return next((family for family in families if family.matches(model)), None)


def retired(values: Mapping[str, Any], today: date) -> bool:
    shutdown = values.get("shutdown")
    return isinstance(shutdown, str) and shutdown <= today.isoformat()


def merge(model: str, layers: Iterable[Layer], *, family: str | None, known: bool, listed: bool) -> ModelInfo:
    """One model's facts from its layers (later layers win), checked as a whole."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    setters: dict[str, tuple[int, Layer]] = {}
    for index, layer in enumerate(layers):
        for field, value in layer.values.items():
            values[field], sources[field], setters[field] = value, layer.source, (index, layer)
    prices = {field: values.pop(field) for field in PRICE_FIELDS if field in values}
    if prices:
        if len(prices) != len(PRICE_FIELDS):
            missing = [field for field in PRICE_FIELDS if field not in prices]
            raise CatalogError(f"{setters[next(iter(prices))][1].where}: models.{model!r} sets some prices but not {', '.join(missing)}")
        values["prices"] = Prices(prices["input_price"], prices["cached_input_price"], prices["output_price"])
        sources["prices"] = sources["input_price"]
    for field in PRICE_FIELDS:
        sources.pop(field, None)
    info = ModelInfo(model=model, family=family, known=known, listed=listed, sources=sources, **values)
    return _checked(info, setters)


def _checked(info: ModelInfo, setters: Mapping[str, tuple[int, Layer]]) -> ModelInfo:
    name = info.model
    if info.auto_compact_tokens is not None and info.auto_compact_tokens > info.context_window:
        raise CatalogError(f"{setters['auto_compact_tokens'][1].where}: models.{name!r}.auto_compact_tokens is larger than its context_window")
    if not info.reasoning:
        return replace(info, efforts=(), default_effort=None, reasoning_summaries=False, summary="none")
    if not info.efforts:
        raise CatalogError(f"{setters['reasoning'][1].where}: models.{name!r} reasons but lists no efforts")
    if info.default_effort not in info.efforts:
        default_set, efforts_set = setters.get("default_effort"), setters.get("efforts")
        if default_set is not None and (efforts_set is None or default_set[0] >= efforts_set[0]):
            raise CatalogError(
                f"{default_set[1].where}: models.{name!r}.default_effort {info.default_effort!r} "
                f"is not in its efforts ({', '.join(info.efforts)})"
            )
        picked = "medium" if "medium" in info.efforts else info.efforts[0]  # the efforts changed after it was set
        info = replace(info, default_effort=picked, sources={**info.sources, "default_effort": info.sources.get("efforts", "default")})
    return info
