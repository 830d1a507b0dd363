"""The one error of settings: a single line naming the setting, its source and what was expected."""


class SettingsError(ValueError):
    """An invalid setting; the message is a single line that names it."""
