"""Every third-party module the package imports is declared in pyproject.toml, so an
install never depends on what another dependency happens to pull in."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).parents[2]


def _imported_top_modules() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "echsd").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"echsd", "__future__"}


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {re.split(r"[\[<>=!~; ]", spec, maxsplit=1)[0].lower().replace("_", "-") for spec in project["dependencies"]}


def test_every_imported_distribution_is_declared() -> None:
    providers = packages_distributions()
    declared = _declared()
    missing = {}
    for module in sorted(_imported_top_modules()):
        distributions = {d.lower().replace("_", "-") for d in providers.get(module, [module])}
        if not distributions & declared:
            missing[module] = sorted(distributions)
    assert missing == {}, f"imported but not declared in pyproject.toml: {missing}"
