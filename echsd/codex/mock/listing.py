"""The mock's model list (pure): which models it knows and what each takes, and ``GET /models``
in the two shapes the real endpoints answer it.

The models are the shipped catalog's and the script's ``models``. The API's list
(``/v1/models``, ``/models``) names them (``{"object": "list", "data": [{"id", "object":
"model", "created", "owned_by", "shutdown_date"?}]}``); the ChatGPT backend's
(``/backend-api/codex/models?client_version=...``, as Codex asks it) describes the ones it
offers (the catalog's ``[listing] chatgpt`` and the script's) in Codex's model-info shape,
with an ``ETag``. The same facts decide the mock's refusals (``checks``): an effort a
listed model does not take, an input past its window.
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping

import orjson

from echsd.codex.catalog import default_catalog, shipped_tables
from echsd.codex.catalog_tables import family_of
from echsd.codex.mock.script import ListedModel, Script

API_PATHS = frozenset({"/v1/models", "/models"})
BACKEND_PATH = "/backend-api/codex/models"
CREATED = 1_790_000_000  # the ``created`` time every listed model shows


def known_models(script: Script | None) -> dict[str, ListedModel]:
    """What the mock's endpoint serves: the shipped catalog's models, then the script's."""
    models = {
        info.model: ListedModel(info.model, info.efforts, info.default_effort, info.context_window, info.verbosity)
        for info in default_catalog().models()
    }
    for model in script.models if script is not None else ():
        models[model.name] = model
    return models


def _family_efforts(name: str) -> list[str]:
    """What the backend would say of a model the script lists without efforts: its family's."""
    family = family_of(name, default_catalog().families())
    efforts = family.values.get("efforts") if family is not None else None
    return list(efforts) if efforts else ["low", "medium", "high"]


def api_listing(models: Mapping[str, ListedModel]) -> dict[str, Any]:
    catalog = default_catalog()
    data = []
    for name in sorted(models):
        entry: dict[str, Any] = {"id": name, "object": "model", "created": CREATED, "owned_by": "system"}
        shutdown = catalog.lookup(name).shutdown if name in catalog else None
        if shutdown:
            entry["shutdown_date"] = shutdown
        data.append(entry)
    return {"object": "list", "data": data}


def backend_listing(models: Mapping[str, ListedModel], script: Script | None) -> tuple[dict[str, Any], str]:
    """The backend's list and its ETag."""
    scripted = script.models if script is not None else ()
    offered = [*shipped_tables().get("listing", {}).get("chatgpt", ()), *(model.name for model in scripted)]
    entries = [_backend_entry(models[name], priority) for priority, name in enumerate(dict.fromkeys(offered)) if name in models]
    body = {"models": entries}
    return body, '"' + hashlib.sha256(orjson.dumps(body)).hexdigest()[:16] + '"'


def _backend_entry(model: ListedModel, priority: int) -> dict[str, Any]:
    efforts = list(model.efforts) if model.efforts is not None else _family_efforts(model.name)
    return {
        "slug": model.name,
        "display_name": model.name,
        "description": f"{model.name} (the mock upstream's)",
        "default_reasoning_level": model.default_effort or ("medium" if "medium" in efforts else efforts[0] if efforts else None),
        "supported_reasoning_levels": [{"effort": effort, "description": effort} for effort in efforts],
        "shell_type": "unified_exec",
        "visibility": "hide" if model.hidden else "list",
        "supported_in_api": True,
        "priority": priority,
        "default_reasoning_summary": "none",
        "support_verbosity": model.verbosity is not None,
        "default_verbosity": model.verbosity,
        "apply_patch_tool_type": "freeform",
        "supports_parallel_tool_calls": True,
        "truncation_policy": {"mode": "tokens", "limit": 10000},
        "context_window": model.context_window,
        "input_modalities": ["text", "image"],
    }
