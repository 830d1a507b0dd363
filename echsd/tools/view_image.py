"""``view_image``: show the model a local image, as Codex's view_image does.

The call's output is the image itself: a ``function_call_output`` whose ``output`` is a
list of content items holding one ``input_image`` with a data URL (what Codex sends and
what the Responses API takes for a function call's output). The path may be relative to
the thread's cwd; the image is downscaled and re-encoded as ``prompt_image.py`` says.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

from echsd.tools.base import ToolContext, ToolError, ToolResult, ToolSpec
from echsd.tools.fsaccess import NOTHING_HIDDEN, Budget, HiddenPaths, hidden_paths, hidden_roots, off_loop, open_regular, os_error_text, refuse_hidden, resolve
from echsd.tools.prompt_image import MAX_FILE_BYTES, ImageError, PromptImage, prepare

SPEC = ToolSpec(
    name="view_image",
    description=(
        "View a local image from the filesystem (only use if given a full filepath by the user, "
        "and the image isn't already attached to the thread context within <image ...> tags)."
    ),
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string", "description": "Local filesystem path to an image file"}},
        "required": ["path"],
        "additionalProperties": False,
    },
)


class ViewImage:
    spec = SPEC

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if not args["path"]:
            raise ToolError("path must not be empty")
        path = resolve(ctx.cwd, args["path"])
        hidden = hidden_paths(ctx.sandbox)
        image = await off_loop(lambda budget: load_image(path, budget, hidden), ctx.timeout_s, "view_image")
        meta = {"path": str(path), "mime": image.mime, "width": image.width, "height": image.height, "bytes": len(image.data)}
        return ToolResult([{"type": "input_image", "image_url": image.data_url()}], meta={"image": meta})


def load_image(path: Path, budget: Budget, hidden: HiddenPaths = NOTHING_HIDDEN) -> PromptImage:
    """Read and prepare the image at ``path`` (runs in a worker thread), unless the
    thread's sandbox ``hidden`` it."""
    try:
        fd = open_regular(path)
    except OSError as exc:
        if isinstance(exc, IsADirectoryError) or exc.errno is None:
            raise ToolError(f"image path `{path}` is not a file") from None
        verb = "locate" if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP) else "read"
        raise ToolError(f"unable to {verb} image at `{path}`: {os_error_text(exc)}") from None
    with os.fdopen(fd, "rb") as handle:
        refuse_hidden(path, hidden_roots(hidden), fd=fd)
        try:
            data = handle.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise ToolError(f"unable to read image at `{path}`: {os_error_text(exc)}") from None
    budget.check()
    try:
        return prepare(data)
    except ImageError as exc:
        raise ToolError(f"unable to process image at `{path}`: {exc}") from None
