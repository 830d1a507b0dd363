"""``echsd models``: the model catalog and where each fact came from.

The catalog is the shipped one, merged with the endpoint's model list the daemon last
fetched (``<state>/models-cache.json``) and ``[models."NAME"]`` of config.toml.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import click

from echsd.codex.catalog import ModelCatalog, ModelInfo
from echsd.codex.model_list import CACHE_FILE, read_cache
from echsd.settings import PROVIDERS, SettingsError, default_state_dir, load_catalog_setting


@click.command("models")
@click.option(
    "--state-dir", type=click.Path(file_okay=False), help="State directory whose config.toml and model list cache are read [ECHS_STATE_DIR]."
)
@click.option("--json", "as_json", is_flag=True, help="A JSON list of objects instead of a table.")
def models(state_dir: str | None, as_json: bool) -> None:
    """List the model catalog and where each fact came from.

    Per model: reasoning efforts, context window, compaction point, USD per 1M tokens, and
    the sources of its facts: a family rule (by name), the shipped catalog, the endpoint's
    model list (as the daemon last fetched it), config.toml.
    """
    try:
        catalog = load_catalog_setting({"state_dir": state_dir})
    except SettingsError as exc:
        click.echo(f"echsd: {exc}", err=True)
        raise SystemExit(2) from None
    listing = read_cache((Path(state_dir) if state_dir else default_state_dir(os.environ)) / CACHE_FILE, None)
    if listing is not None:
        catalog.set_listing(listing.models)
    entries = catalog.models()
    if as_json:
        rows = [{**info.to_dict(), "source": catalog.source(info.model), "default_for": default_for(catalog, info.model)} for info in entries]
        click.echo(json.dumps(rows, indent=2))
        return
    table = [("MODEL", "REASONING (* default)", "WINDOW", "COMPACT AT", "USD/1M IN CACHED OUT", "SOURCE", "ALSO")]
    table += [_row(catalog, info) for info in entries]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    if listing is not None:
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(listing.fetched_at))
        click.echo(f"\nendpoint: the model list of {listing.base_url} ({len(listing.models)} models), fetched {when} by the daemon")
    else:
        click.echo("\nendpoint: no model list fetched yet (the daemon fetches one at start)")


def default_for(catalog: ModelCatalog, model: str) -> list[str]:
    return [provider for provider in PROVIDERS if catalog.recommended(provider) == model]


def describe_reasoning(info: ModelInfo) -> str:
    if not info.reasoning:
        return "no"
    return " ".join(f"{effort}*" if effort == info.default_effort else effort for effort in info.efforts)


def describe_prices(info: ModelInfo) -> str:
    prices = info.prices
    return f"{prices.input:g} {prices.cached_input:g} {prices.output:g}" if prices else "-"


def describe_features(info: ModelInfo) -> list[str]:
    features = [f"summary {info.summary}"] if info.reasoning_summaries and info.summary != "none" else []
    features += [f"verbosity {info.verbosity}"] if info.verbosity else []
    features += ["custom tools"] if info.custom_tools else []
    features += ["parallel tools"] if info.parallel_tool_calls else []
    features += [f"shuts down {info.shutdown}"] if info.shutdown else []
    return features


def _row(catalog: ModelCatalog, info: ModelInfo) -> tuple[str, ...]:
    also: list[Any] = describe_features(info)
    defaults = default_for(catalog, info.model)
    also += [f"default for {', '.join(defaults)}"] if defaults else []
    return (
        info.model,
        describe_reasoning(info),
        f"{info.context_window:,}",
        f"{info.compact_at:,}",
        describe_prices(info),
        catalog.source(info.model),
        ", ".join(also),
    )
