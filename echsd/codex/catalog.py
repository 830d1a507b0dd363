"""The model catalog: per model, what a request may contain, how big the window is, what it costs.

Four layers, later ones winning field by field (``catalog_tables.merge``): the first family
rule whose globs fit the name (``[families.NAME]`` of ``models.toml``), the shipped table,
the endpoint's model list (``set_listing``: fetched at start, cached in the state dir), and
the ``[models."NAME"]`` tables of ``config.toml``. An entry whose shutdown date has passed
leaves the catalog. A model that is no entry is judged by its family alone (reasoning,
efforts offered but not enforced, window), or, matching none, gets conservative defaults
(no reasoning parameters, no custom tools, a 128k window); either way one warning per
process says so, and ``on_unseen`` is told (the daemon then asks the endpoint's list
again). Dated snapshots (``gpt-4.1-2025-04-14``) inherit from their base model.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import replace
from datetime import UTC, date, datetime
from fnmatch import fnmatchcase
from functools import lru_cache
from importlib import resources
from typing import Any, Callable, Mapping

from echsd.codex.catalog_tables import CatalogError, Family, Layer, family_of, merge, parse_families, parse_table, retired
from echsd.codex.model_info import (
    COMPACT_SHARE,
    REASONING_EFFORTS,
    ModelInfo,
    Prices,
    estimate_cost,
)
from echsd.errors import BadRequest
from echsd.logs import get_logger

__all__ = ["COMPACT_SHARE", "REASONING_EFFORTS", "CatalogError", "ModelCatalog", "ModelInfo", "Prices", "estimate_cost"]

log = get_logger(__name__)

_DATED = re.compile(r"-\d{4}-\d{2}-\d{2}$")
SHIPPED = "the shipped catalog"
MAX_JUDGED = 1024  # models judged by their family, remembered


class ModelCatalog:
    def __init__(
        self,
        shipped: Mapping[str, Any],
        overrides: Mapping[str, Any] | None = None,
        *,
        where: str = "config.toml",
        today: date | None = None,
    ) -> None:
        """``shipped``: the parsed ``models.toml``; ``overrides``: config.toml's ``models`` table."""
        self._today = today or datetime.now(UTC).date()
        self._families = parse_families(shipped.get("families", {}), SHIPPED)
        self._recommended: dict[str, str] = dict(shipped.get("recommended", {}))
        self._ignored: tuple[str, ...] = tuple(shipped.get("listing", {}).get("ignore", ()))
        self._shipped = {name: parse_table(name, table, SHIPPED) for name, table in shipped.get("models", {}).items()}
        if overrides is not None and not isinstance(overrides, Mapping):
            raise CatalogError(f"{where}: 'models' must be a table of [models.\"NAME\"] tables")
        self._config = {name: parse_table(name, table, where) for name, table in (overrides or {}).items()}
        self._where = where
        self._listed: dict[str, dict[str, Any]] = {}
        self._entries: dict[str, ModelInfo] = {}
        self._judged: dict[str, ModelInfo] = {}
        self._warned: set[str] = set()
        self.on_unseen: Callable[[str], None] | None = None  # told once of each model that is no entry
        self._build()

    # ---- building ----------------------------------------------------------------------

    def set_listing(self, listed: Mapping[str, Mapping[str, Any]]) -> list[str]:
        """Merge the endpoint's model list (model -> its facts as table fields); returns the
        models it adds. Names no family knows, or that the listing rules ignore, are left out."""
        kept = {name: dict(values) for name, values in listed.items() if self._admits(name)}
        before = set(self._entries)
        self._listed = kept
        self._build()
        self._judged.clear()
        return sorted(set(self._entries) - before)

    def _admits(self, name: str) -> bool:
        if name in self._shipped or name in self._config:
            return True
        if any(fnmatchcase(name, glob) for glob in self._ignored):
            return False
        return family_of(name, self._families) is not None

    def _build(self) -> None:
        entries = {}
        for name in {*self._shipped, *self._listed, *self._config}:
            info = self._merged(name, known=True)
            if not retired({"shutdown": info.shutdown}, self._today):
                entries[name] = info
        self._entries = entries

    def _merged(self, name: str, *, known: bool) -> ModelInfo:
        family = family_of(name, self._families)
        layers = [Layer(f"family {family.name}", SHIPPED, family.values)] if family else []
        for source, tables, where in (("shipped", self._shipped, SHIPPED), ("endpoint", self._listed, "the endpoint's model list"), ("config", self._config, self._where)):
            if name in tables:
                layers.append(Layer(source, where, tables[name]))
        return merge(name, layers, family=family.name if family else None, known=known, listed=name in self._listed)

    # ---- reading -----------------------------------------------------------------------

    def __contains__(self, model: str) -> bool:
        return self.lookup(model) is not None

    def models(self) -> list[ModelInfo]:
        return [self._entries[name] for name in sorted(self._entries)]

    def families(self) -> list[Family]:
        return list(self._families)

    def source(self, model: str) -> str:
        """Where an entry's facts came from, joined: ``shipped``, ``family gpt-6+endpoint``, ..."""
        info = self.get(model)
        layers = [
            s for s in ("family", "shipped", "endpoint", "config")
            if any(v.split(" ")[0] == s for v in info.sources.values()) or (s == "endpoint" and info.listed)
        ]
        labels = [f"family {info.family}" if layer == "family" else layer for layer in layers]
        return "+".join(labels) or "default"

    def recommended(self, provider: str) -> str | None:
        """The default model for new threads on ``provider``."""
        return self._recommended.get(provider)

    def lookup(self, model: str) -> ModelInfo | None:
        """The catalog entry (a dated snapshot resolves to its base model), or None."""
        info = self._entries.get(model)
        if info is None and _DATED.search(model):
            base = self._entries.get(_DATED.sub("", model))
            info = replace(base, model=model) if base is not None else None
        return info

    def get(self, model: str) -> ModelInfo:
        """The entry, or what its family (if any) says of a model that is no entry."""
        info = self.lookup(model)
        if info is not None:
            return info
        info = self._judged.get(model)
        if info is None:
            if len(self._judged) >= MAX_JUDGED:  # names come from clients: keep the memos bounded
                self._judged.clear()
                self._warned.clear()
            info = self._judged[model] = self._merged(model, known=False)
        if model not in self._warned:
            self._warned.add(model)
            if info.family is not None:
                log.warning("model not in the catalog: judged by its family's rules", model=model, family=info.family)
            else:
                log.warning(
                    "model not in the catalog: requests carry no reasoning parameters and assume a 128k window; "
                    'describe it in config.toml as [models."NAME"]',
                    model=model,
                )
            if self.on_unseen is not None:
                self.on_unseen(model)
        return info

    def default_effort(self, model: str) -> str:
        """The effort a new thread on ``model`` gets when none is asked for."""
        info = self.get(model)
        if info.reasoning and info.default_effort:
            return info.default_effort
        return "none" if info.known or info.family else "medium"

    def validate_effort(self, model: str, effort: Any) -> str:
        """``effort`` if ``model`` accepts it, else ``BadRequest`` saying what it accepts.

        Efforts that are facts (shipped, listed, configured) are enforced; a family's guess
        is not (the model may take more), nor is anything for a model judged by nothing (its
        requests carry no ``reasoning`` anyway). A model that does not reason takes ``none``.
        """
        if effort not in REASONING_EFFORTS:
            raise BadRequest(f"reasoning must be one of {', '.join(REASONING_EFFORTS)} (got {effort!r})")
        info = self.get(model)
        if not info.known and info.family is None:
            return str(effort)
        if not info.reasoning:
            if effort != "none":
                raise BadRequest(f"model {model} does not reason: reasoning must be 'none' (got {effort!r})")
            return str(effort)
        if info.efforts_checked and effort not in info.efforts:
            raise BadRequest(f"model {model} accepts reasoning {', '.join(info.efforts)} (got {effort!r})")
        return str(effort)

    def estimate_cost(self, model: str, *, input_tokens: int, cached_tokens: int, output_tokens: int) -> float | None:
        info = self.get(model)
        return estimate_cost(info, input_tokens=input_tokens, cached_tokens=cached_tokens, output_tokens=output_tokens)

    def prompt(self, model: str) -> str:
        """The base prompt for ``model``: its family's prompt file, with the model's notes."""
        info = self.get(model)
        text = prompt_file(info.prompt)
        return f"{text.rstrip()}\n\n{info.prompt_notes.strip()}\n" if info.prompt_notes.strip() else text


@lru_cache(maxsize=8)
def prompt_file(name: str) -> str:
    return resources.files("echsd.codex").joinpath("prompts", f"{name}.md").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def shipped_tables() -> dict[str, Any]:
    """The parsed ``models.toml``: ``recommended``, ``listing``, ``families``, ``models``."""
    text = resources.files("echsd.codex").joinpath("models.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


@lru_cache(maxsize=1)
def default_catalog() -> ModelCatalog:
    """The shipped catalog alone (the mock upstream, and clients built without settings)."""
    return ModelCatalog(shipped_tables())


def load_catalog(overrides: Mapping[str, Any] | None, *, where: str = "config.toml") -> ModelCatalog:
    return ModelCatalog(shipped_tables(), overrides, where=where)
