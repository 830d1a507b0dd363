"""``ToolError``: a failure the model reads as the call's output, raised by tools and by the
parts they use (exec sessions), which know nothing else of tools."""


class ToolError(Exception):
    """A failure the model should read as the call's output (bad arguments, missing file...).
    ``meta``: fields for the call's ``tool.completed`` (e.g. ``sandbox_denied``)."""

    def __init__(self, message: str, *, meta: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.meta = meta or {}
