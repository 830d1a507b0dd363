"""The endpoint's model list: its two shapes read into catalog fields (pure), and its cache.

- The API (``GET <base>/models``): ``{"object": "list", "data": [{"id", "object": "model",
  "created", "owned_by", "shutdown_date"?}]}``. It says which models exist (and when one
  shuts down), nothing of what they take.
- The ChatGPT backend (``GET <base>/models?client_version=<Codex version>``, as Codex asks
  it): ``{"models": [{"slug", "display_name", "description", "default_reasoning_level",
  "supported_reasoning_levels": [{"effort", "description"}], "context_window",
  "support_verbosity", "default_verbosity", "default_reasoning_summary",
  "apply_patch_tool_type", "supports_parallel_tool_calls", "visibility", "priority", ...}]}``
  with an ``ETag``. Its facts become the catalog's ``endpoint`` layer.

Each entry becomes the fields of a ``[models."NAME"]`` table, checked like one: an entry
that does not fit is left out (and logged), never a reason to refuse the rest. The cache
(``<state>/models-cache.json``) keeps the last list with its time, the endpoint it came
from and its ETag, so a daemon starts with it before (or without) reaching the endpoint.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import orjson

from echsd.codex.catalog_tables import CatalogError, parse_table
from echsd.codex.model_info import REASONING_EFFORTS, SUMMARIES, VERBOSITIES
from echsd.logs import get_logger

log = get_logger(__name__)

CACHE_FILE = "models-cache.json"
WHERE = "the endpoint's model list"


@dataclass(frozen=True)
class ModelListing:
    models: dict[str, dict[str, Any]]  # model -> catalog table fields
    fetched_at: float = field(default_factory=time.time)
    etag: str | None = None
    base_url: str | None = None  # the endpoint it came from (as cached)


class ListingError(ValueError):
    """The answer is not a model list of either shape."""


def parse_listing(body: bytes, etag: str | None = None) -> ModelListing:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise ListingError("the model list is not JSON") from None
    if isinstance(data, dict) and isinstance(data.get("models"), list):
        entries = [(entry.get("slug"), backend_fields(entry)) for entry in data["models"] if isinstance(entry, dict)]
    elif isinstance(data, dict) and isinstance(data.get("data"), list):
        entries = [(entry.get("id"), api_fields(entry)) for entry in data["data"] if isinstance(entry, dict)]
    else:
        raise ListingError("the model list has neither 'models' (the ChatGPT backend's) nor 'data' (the API's)")
    models: dict[str, dict[str, Any]] = {}
    for name, fields in entries:
        if not isinstance(name, str) or not name or len(name) > 256:
            continue
        try:
            models[name] = parse_table(name, fields, WHERE)
        except CatalogError as exc:
            log.warning("a model of the endpoint's list left out", model=name, error=str(exc))
    return ModelListing(models, etag=etag)


def api_fields(entry: Mapping[str, Any]) -> dict[str, Any]:
    shutdown = entry.get("shutdown_date")
    return {"shutdown": shutdown} if isinstance(shutdown, str) and shutdown else {}


def backend_fields(entry: Mapping[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    levels = entry.get("supported_reasoning_levels")
    if isinstance(levels, list):
        efforts = [level.get("effort") if isinstance(level, dict) else level for level in levels]
        efforts = [effort for effort in efforts if effort in REASONING_EFFORTS]
        fields["reasoning"] = bool(efforts)
        if efforts:
            fields["efforts"] = efforts
            if entry.get("default_reasoning_level") in efforts:
                fields["default_effort"] = entry["default_reasoning_level"]
    window = entry.get("context_window")
    if type(window) is int and window > 0:
        fields["context_window"] = window
    if entry.get("support_verbosity") is False:
        fields["verbosity"] = "none"
    elif entry.get("support_verbosity") is True and entry.get("default_verbosity") in VERBOSITIES:
        fields["verbosity"] = entry["default_verbosity"]
    if isinstance(entry.get("supports_reasoning_summaries"), bool):
        fields["reasoning_summaries"] = entry["supports_reasoning_summaries"]
    if entry.get("default_reasoning_summary") in SUMMARIES:
        fields["summary"] = entry["default_reasoning_summary"]
    if isinstance(entry.get("supports_parallel_tool_calls"), bool):
        fields["parallel_tool_calls"] = entry["supports_parallel_tool_calls"]
    if entry.get("apply_patch_tool_type") in ("freeform", "function"):
        fields["custom_tools"] = entry["apply_patch_tool_type"] == "freeform"
    description = entry.get("description") or entry.get("display_name")
    if isinstance(description, str) and description:
        fields["description"] = description
    return fields


# ---- the cache --------------------------------------------------------------------------


def read_cache(path: Path, base_url: str | None) -> ModelListing | None:
    """The cached list of ``base_url``'s endpoint (None: whichever endpoint it came from), or
    None (none, another endpoint's, unreadable)."""
    try:
        data = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, orjson.JSONDecodeError) as exc:
        log.warning("unreadable model list cache; ignoring it", path=str(path), error=str(exc))
        return None
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        return None
    if base_url is not None and data.get("base_url") != base_url:
        return None
    models: dict[str, dict[str, Any]] = {}
    for name, fields in data["models"].items():
        try:
            models[name] = parse_table(name, fields, f"the model list cached in {path}")
        except CatalogError:
            continue
    fetched_at = data.get("fetched_at")
    etag = data.get("etag")
    source = data.get("base_url")
    return ModelListing(
        models,
        float(fetched_at) if isinstance(fetched_at, (int, float)) else 0.0,
        etag if isinstance(etag, str) else None,
        source if isinstance(source, str) else None,
    )


def _as_table(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Parsed fields back in a table's form (they are parsed again when read)."""
    table = {key: list(value) if isinstance(value, tuple) else value for key, value in fields.items()}
    if "verbosity" in table and table["verbosity"] is None:
        table["verbosity"] = "none"
    return table


def write_cache(path: Path, base_url: str, listing: ModelListing) -> None:
    """Atomically (temp file + rename): a reader never sees half a list."""
    document = {
        "base_url": base_url,
        "fetched_at": listing.fetched_at,
        "etag": listing.etag,
        "models": {name: _as_table(fields) for name, fields in listing.models.items()},
    }
    fd, tmp = tempfile.mkstemp(prefix=f".{CACHE_FILE}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(orjson.dumps(document, option=orjson.OPT_INDENT_2))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
