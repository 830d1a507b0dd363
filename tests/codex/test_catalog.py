"""The model catalog: shipped data, config.toml overrides, effort validation, cost estimates."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import structlog

from echsd.codex.catalog import COMPACT_SHARE, REASONING_EFFORTS, default_catalog, shipped_tables
from echsd.errors import BadRequest
from echsd.settings import DEFAULT_MODELS, SettingsError, load_catalog_setting, load_settings


def settings_with(tmp_path: Path, config: str):
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    (state / "config.toml").write_text(config)
    return load_settings({"state_dir": str(state)}, {"HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / "codex")})


def test_shipped_entries_are_consistent() -> None:
    catalog = default_catalog()
    assert len(catalog.models()) == len(shipped_tables())
    for info in catalog.models():
        assert info.context_window > 0 and 0 < info.compact_at <= info.context_window, info.model
        assert set(info.efforts) <= set(REASONING_EFFORTS), info.model
        if info.reasoning:
            assert info.default_effort in info.efforts, info.model
        else:
            assert info.efforts == () and not info.reasoning_summaries, info.model
        if info.prices is not None:
            assert info.prices.cached_input <= info.prices.input <= info.prices.output, info.model
    for provider, model in DEFAULT_MODELS.items():
        assert model in catalog and catalog.get(model).reasoning, provider


def test_current_defaults_and_limits() -> None:
    catalog = default_catalog()
    assert DEFAULT_MODELS["codex"] == "gpt-5.5" and DEFAULT_MODELS["openai"] == "gpt-5.5"
    gpt55 = catalog.get("gpt-5.5")
    assert gpt55.context_window == 272_000 and gpt55.compact_at == int(272_000 * COMPACT_SHARE)
    assert "xhigh" in gpt55.efforts and gpt55.default_effort == "medium" and gpt55.custom_tools
    assert "minimal" not in catalog.get("gpt-5.1").efforts and "xhigh" not in catalog.get("gpt-5.1").efforts
    assert not catalog.get("gpt-4.1").reasoning and not catalog.get("gpt-5-chat-latest").reasoning


def test_effort_validation_names_what_the_model_accepts() -> None:
    catalog = default_catalog()
    assert catalog.validate_effort("gpt-5.5", "xhigh") == "xhigh"
    with pytest.raises(BadRequest, match=r"model gpt-5\.1 accepts reasoning none, low, medium, high \(got 'minimal'\)"):
        catalog.validate_effort("gpt-5.1", "minimal")
    with pytest.raises(BadRequest, match=r"gpt-4\.1 does not reason: reasoning must be 'none'"):
        catalog.validate_effort("gpt-4.1", "high")
    assert catalog.validate_effort("gpt-4.1", "none") == "none"
    with pytest.raises(BadRequest, match="reasoning must be one of none, minimal, low, medium, high, xhigh"):
        catalog.validate_effort("gpt-5.5", "max")
    assert catalog.validate_effort("a-model-nobody-knows", "xhigh") == "xhigh"
    assert catalog.default_effort("gpt-5.6-sol") == "low" and catalog.default_effort("gpt-4.1") == "none"
    assert catalog.default_effort("a-model-nobody-knows") == "medium"


def test_unknown_model_gets_conservative_defaults_and_one_warning() -> None:
    catalog = load_catalog_setting({"state_dir": "/nonexistent-state"}, {})
    with structlog.testing.capture_logs() as logs:
        info = catalog.get("brand-new-model")
        again = catalog.get("brand-new-model")
    assert info == again and not info.known and not info.reasoning and not info.custom_tools
    assert info.context_window == 128_000 and info.prices is None
    warnings = [entry for entry in logs if entry["log_level"] == "warning"]
    assert len(warnings) == 1 and warnings[0]["model"] == "brand-new-model"


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
    assert catalog.source("local-llm") == "config" and catalog.source("gpt-5.5") == "shipped+config"
    assert catalog.source("gpt-4.1") == "shipped"
    with pytest.raises(BadRequest, match="accepts reasoning low, high"):
        catalog.validate_effort("local-llm", "medium")


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[models."m"]\ncontext_window = "big"', "models.'m'.context_window must be a positive number of tokens"),
        ('[models."m"]\nreasoning = true', "models.'m' reasons but lists no efforts"),
        ('[models."m"]\nreasoning = true\nefforts = ["max"]', "models.'m'.efforts must be a list of none"),
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
