"""The model catalog: shipped data, config.toml overrides, effort validation, cost estimates."""

from __future__ import annotations

import ast
import json
from datetime import date
from pathlib import Path

import pytest
import structlog

from echsd.codex.catalog import COMPACT_SHARE, REASONING_EFFORTS, ModelCatalog, default_catalog, shipped_tables
from echsd.errors import BadRequest
from echsd.settings import SettingsError, load_catalog_setting, load_settings
from echsd.tools.registry import builtin_tools, default_tool_names


CODEX_MODELS = Path(__file__).parents[2].parent / "shared" / "conformance" / "codex-0.169" / "models.json"


def settings_with(tmp_path: Path, config: str):
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    (state / "config.toml").write_text(config)
    return load_settings({"state_dir": str(state)}, {"HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / "codex")})


def test_shipped_entries_are_consistent() -> None:
    catalog = default_catalog()
    assert len(catalog.models()) == len(shipped_tables()["models"])
    for info in catalog.models():
        assert info.context_window > 0 and 0 < info.compact_at <= info.context_window, info.model
        assert set(info.efforts) <= set(REASONING_EFFORTS), info.model
        assert info.known and info.prompt and catalog.prompt(info.model).strip(), info.model
        if info.reasoning:
            assert info.default_effort in info.efforts, info.model
        else:
            assert info.efforts == () and not info.reasoning_summaries and info.summary == "none", info.model
        if info.prices is not None:
            assert info.prices.cached_input <= info.prices.input <= info.prices.output, info.model
    for provider in ("openai", "codex", "mock"):
        model = catalog.recommended(provider)
        assert model in catalog and catalog.get(model).reasoning, provider


def test_todays_models_follow_codex_0169() -> None:
    """The gpt-6 family with Codex 0.169's windows, efforts, verbosity and defaults; gpt-6.1-sol
    is the default for both real providers; no model past its shutdown is listed."""
    catalog = default_catalog()
    assert catalog.recommended("codex") == catalog.recommended("openai") == "gpt-6.1-sol"
    codex = {entry["slug"]: entry for entry in json.loads(CODEX_MODELS.read_text())["models"]} if CODEX_MODELS.exists() else {}
    expected = {
        "gpt-6.1-sol": (272_000, "low", ("low", "medium", "high", "xhigh", "max", "ultra")),
        "gpt-6.1-terra": (500_000, "low", ("low", "medium", "high", "xhigh", "max", "ultra")),
        "gpt-6-astra": (272_000, "low", ("low", "medium", "high", "xhigh", "max", "ultra")),
        "gpt-6-sol": (272_000, "medium", ("low", "medium", "high", "xhigh", "max", "ultra")),
        "gpt-6-luna": (272_000, "medium", ("low", "medium", "high", "xhigh", "max")),
        "gpt-5.6-sol": (272_000, "low", ("low", "medium", "high", "xhigh", "max", "ultra")),
        "gpt-5.6-terra": (272_000, "medium", ("low", "medium", "high", "xhigh", "max", "ultra")),
        "gpt-5.6-luna": (272_000, "medium", ("low", "medium", "high", "xhigh", "max")),
    }
    for model, (window, default, efforts) in expected.items():
        info = catalog.get(model)
        assert (info.context_window, info.default_effort, info.efforts) == (window, default, efforts), model
        assert (info.verbosity, info.summary, info.custom_tools) == ("low", "none", True), model
        if model in codex:  # the capture agrees, where it is present
            fact = codex[model]
            assert (fact["context_window"], fact["default_reasoning_level"], tuple(fact["supported_reasoning_levels"])) == (window, default, efforts)
            assert fact["default_verbosity"] == info.verbosity and fact["default_reasoning_summary"] == info.summary
    retired = ["gpt-5-codex", "gpt-5.1-codex", "gpt-5.1-codex-max", "gpt-5.1-codex-mini", "gpt-5.2-codex", "gpt-5-chat-latest", "o4-mini", "gpt-4.1-nano"]
    assert [model for model in retired if model in catalog] == []
    gpt55 = catalog.get("gpt-5.5")
    assert gpt55.context_window == 272_000 and gpt55.compact_at == int(272_000 * COMPACT_SHARE)
    assert "none" not in catalog.get("gpt-5.4-mini").efforts and "xhigh" not in catalog.get("gpt-5.1").efforts
    assert not catalog.get("gpt-4.1").reasoning and catalog.get("gpt-4.1").family == "gpt-4"


def test_a_model_past_its_shutdown_leaves_the_catalog() -> None:
    tables = shipped_tables()
    before = ModelCatalog(tables, today=date(2026, 12, 10))
    after = ModelCatalog(tables, today=date(2026, 12, 11))
    assert before.get("gpt-5").known and before.get("gpt-5").shutdown == "2026-12-11"
    assert "gpt-5" not in after and not after.get("gpt-5").known
    assert after.get("gpt-5").reasoning  # judged by its family from then on


def test_unknown_models_are_judged_by_their_family() -> None:
    catalog = load_catalog_setting({"state_dir": "/nonexistent-state"}, {})
    for model, family in [("gpt-6.9-test", "gpt-6"), ("gpt-5.7", "gpt-5"), ("o7-pro", "o-series"), ("my-codex", "codex"), ("gpt-5.9-codex-max", "codex")]:
        info = catalog.get(model)
        assert not info.known and info.family == family and info.reasoning, model
        assert info.sources["efforts"] == f"family {family}" and not info.efforts_checked
        assert catalog.source(model) == f"family {family}"
    assert catalog.get("gpt-6.9-test").verbosity == "low" and catalog.get("gpt-6.9-test").efforts[-1] == "ultra"
    # A family's efforts are offered, not enforced: the model may take more.
    assert catalog.validate_effort("gpt-6.9-test", "none") == "none"
    assert catalog.default_effort("gpt-6.9-test") == "medium"
    assert not catalog.get("gpt-4.5-preview").reasoning and catalog.default_effort("gpt-4.5-preview") == "none"


def test_effort_validation_names_what_the_model_accepts() -> None:
    catalog = default_catalog()
    assert catalog.validate_effort("gpt-5.5", "xhigh") == "xhigh"
    assert catalog.validate_effort("gpt-6.1-sol", "ultra") == "ultra"
    with pytest.raises(BadRequest, match=r"model gpt-5\.1 accepts reasoning none, low, medium, high \(got 'minimal'\)"):
        catalog.validate_effort("gpt-5.1", "minimal")
    with pytest.raises(BadRequest, match=r"model gpt-6-luna accepts reasoning low, medium, high, xhigh, max \(got 'ultra'\)"):
        catalog.validate_effort("gpt-6-luna", "ultra")
    with pytest.raises(BadRequest, match=r"gpt-4\.1 does not reason: reasoning must be 'none'"):
        catalog.validate_effort("gpt-4.1", "high")
    assert catalog.validate_effort("gpt-4.1", "none") == "none"
    with pytest.raises(BadRequest, match="reasoning must be one of none, minimal, low, medium, high, xhigh, max, ultra"):
        catalog.validate_effort("gpt-5.5", "extreme")
    assert catalog.validate_effort("a-model-nobody-knows", "xhigh") == "xhigh"
    assert catalog.default_effort("gpt-5.6-sol") == "low" and catalog.default_effort("gpt-4.1") == "none"
    assert catalog.default_effort("a-model-nobody-knows") == "medium"


def test_unknown_model_gets_conservative_defaults_and_one_warning() -> None:
    catalog = load_catalog_setting({"state_dir": "/nonexistent-state"}, {})
    seen: list[str] = []
    catalog.on_unseen = seen.append
    with structlog.testing.capture_logs() as logs:
        info = catalog.get("brand-new-model")
        again = catalog.get("brand-new-model")
    assert info == again and not info.known and not info.reasoning and not info.custom_tools
    assert info.context_window == 128_000 and info.prices is None and info.family is None
    warnings = [entry for entry in logs if entry["log_level"] == "warning"]
    assert len(warnings) == 1 and warnings[0]["model"] == "brand-new-model"
    assert seen == ["brand-new-model"]  # the daemon asks the endpoint's model list again


def test_dated_snapshots_inherit_their_base_model() -> None:
    info = default_catalog().get("gpt-4.1-2025-04-14")
    assert info.known and info.model == "gpt-4.1-2025-04-14" and info.context_window == 1_047_576


def test_cost_estimate_prices_cached_input_apart() -> None:
    catalog = default_catalog()
    # gpt-5.5: $5 in, $0.50 cached, $30 out per million; input_tokens includes the cached ones.
    cost = catalog.estimate_cost("gpt-5.5", input_tokens=1_000_000, cached_tokens=400_000, output_tokens=100_000)
    assert cost == pytest.approx(0.6 * 5 + 0.4 * 0.5 + 0.1 * 30)
    assert catalog.estimate_cost("mock-model", input_tokens=10, cached_tokens=0, output_tokens=10) == 0.0
    assert catalog.estimate_cost("unpriced-model", input_tokens=10, cached_tokens=0, output_tokens=10) is None


def test_config_toml_overrides_and_adds_models(tmp_path: Path) -> None:
    settings = settings_with(
        tmp_path,
        """
model = "local-llm"

[models."gpt-5.5"]
context_window = 400000
auto_compact_tokens = 300000
input_price = 4.0

[models."local-llm"]
reasoning = true
efforts = ["low", "high"]
parallel_tool_calls = true
context_window = 32768
""",
    )
    catalog = settings.catalog
    gpt55 = catalog.get("gpt-5.5")
    assert gpt55.context_window == 400_000 and gpt55.compact_at == 300_000
    assert gpt55.prices is not None and (gpt55.prices.input, gpt55.prices.output) == (4.0, 30.0)
    assert gpt55.efforts == default_catalog().get("gpt-5.5").efforts  # untouched fields stay
    local = catalog.get("local-llm")
    assert local.known and local.efforts == ("low", "high") and local.default_effort == "low"
    assert local.compact_at == int(32768 * COMPACT_SHARE) and not local.custom_tools
    assert catalog.source("local-llm") == "config" and catalog.source("gpt-5.5") == "family gpt-5+shipped+config"
    assert catalog.source("gpt-4.1") == "family gpt-4+shipped" and catalog.source("mock-model") == "shipped"
    assert gpt55.sources["context_window"] == "config" and gpt55.sources["efforts"] == "shipped"
    assert gpt55.sources["prices"] == "config" and gpt55.sources["reasoning"] == "family gpt-5"
    with pytest.raises(BadRequest, match="accepts reasoning low, high"):
        catalog.validate_effort("local-llm", "medium")


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[models."m"]\ncontext_window = "big"', "models.'m'.context_window must be a positive number of tokens"),
        ('[models."m"]\nreasoning = true', "models.'m' reasons but lists no efforts"),
        ('[models."m"]\nreasoning = true\nefforts = ["maximal"]', "models.'m'.efforts must be a list of none"),
        ('[models."m"]\nverbosity = "loud"', "models.'m'.verbosity must be one of none, low, medium, high"),
        ('[models."m"]\nprompt = "../etc/passwd"', "models.'m'.prompt must be the name of a prompt"),
        ('[models."m"]\nshutdown = "soon"', "models.'m'.shutdown must be a date YYYY-MM-DD"),
        ('[models."m"]\ncolour = "red"', "unknown field models.'m'.colour"),
        ('[models."m"]\ninput_price = 1.0', "sets some prices but not cached_input_price, output_price"),
        ('[models."gpt-5.5"]\ndefault_effort = "minimal"', "default_effort 'minimal' is not in its efforts"),
        ('[models."m"]\ncontext_window = 100\nauto_compact_tokens = 200', "auto_compact_tokens is larger than its context_window"),
        ("models = 3", "'models' must be a table"),
    ],
)
def test_bad_model_tables_name_the_file_and_field(tmp_path: Path, table: str, message: str) -> None:
    with pytest.raises(SettingsError) as caught:
        settings_with(tmp_path, table)
    assert message in str(caught.value) and "config.toml" in str(caught.value)
    assert "\n" not in str(caught.value)


def _imports(module_file: str) -> set[str]:
    tree = ast.parse(Path(module_file).read_text())
    names: set[str] = set()
    for node in ast.walk(tree):  # every import, also inside functions and TYPE_CHECKING blocks
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_catalog_does_not_reach_up_into_settings() -> None:
    import echsd.codex.catalog
    import echsd.codex.endpoint

    for module in (echsd.codex.catalog, echsd.codex.endpoint):
        assert not any(name.startswith("echsd.settings") for name in _imports(str(module.__file__))), module.__name__


def test_settings_read_auth_json_through_the_one_reader(tmp_path: Path) -> None:
    import echsd.settings
    from echsd.settings import codex_auth_has_tokens

    assert not {"json", "orjson"} & _imports(str(echsd.settings.__file__))  # auth.json is parsed in codex.auth_file only
    (tmp_path / "auth.json").write_text('{"tokens": {"access_token": ""}}')
    assert not codex_auth_has_tokens(tmp_path)
    (tmp_path / "auth.json").write_text('{"tokens": {"access_token": "a", "refresh_token": "r"}}')
    assert codex_auth_has_tokens(tmp_path)
    (tmp_path / "auth.json").write_text("not json")
    assert not codex_auth_has_tokens(tmp_path)


def test_the_base_prompt_teaches_our_tools_and_how_to_finish() -> None:
    catalog = default_catalog()
    prompt = catalog.prompt("gpt-6.1-sol")
    missing = [name for name in default_tool_names(builtin_tools()) if f"`{name}`" not in prompt]
    assert missing == []
    for teaching in ("%%DONE%%", "AGENTS.md", "<environment_context>", "require_escalated", "session_id", "*** Begin Patch"):
        assert teaching in prompt, teaching
    assert "{{cwd}}" in prompt  # filled in per request
    assert catalog.prompt("gpt-4.1").startswith(prompt.rstrip()) and "no hidden reasoning" in catalog.prompt("gpt-4.1")
