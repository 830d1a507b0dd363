"""``[approval]`` in ``config.toml``: see ``echsd.approval_rules``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from echsd.approval_rules import ApprovalSettings, approval_from
from echsd.settings.errors import SettingsError


def approval_settings_from(table: Any, path: Path) -> ApprovalSettings:
    try:
        return approval_from(table, str(path))
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
