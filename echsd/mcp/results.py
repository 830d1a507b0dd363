"""An MCP tool result as the Responses API's ``function_call_output`` (sans-IO but images).

- text content: the output text (several blocks joined by blank lines);
- ``structuredContent``: its JSON text, instead of the text blocks (the spec asks servers
  to send the same JSON as text too; Codex gives the model the structured form as well);
- images: ``input_image`` content items (data URLs), made fit for a model's input as
  ``view_image`` makes files fit (decoded off the event loop); an output with an image is a
  list of content items, one without is plain text;
- embedded resources: their text, or a line naming a binary one; resource links and audio:
  a line saying what they are;
- ``isError``: a failed call (``ok`` false), its text led by ``error:`` like every other
  tool's failure.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any, Callable

import orjson

from echsd.tools.base import ToolResult
from echsd.tools.prompt_image import ImageError, PromptImage

MAX_IMAGES = 8  # per result: each one rides along in every later request of the thread


@dataclass(frozen=True)
class _Image:
    data: bytes
    mime: str


Part = str | _Image


def _parts(result: Any) -> list[Part]:
    """The result's content as text parts and undecoded images (pure)."""
    parts: list[Part] = []
    structured = getattr(result, "structured_content", None)
    structured_text = orjson.dumps(structured).decode() if structured is not None else None
    if structured_text is not None:
        parts.append(structured_text)
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            if structured_text is None:
                parts.append(str(getattr(block, "text", "")))
        elif kind == "image":
            parts.append(_decoded(getattr(block, "data", ""), str(getattr(block, "mime_type", "") or "image")))
        elif kind == "audio":
            parts.append(f"[audio ({getattr(block, 'mime_type', 'unknown type')}): not shown]")
        elif kind == "resource_link":
            parts.append(f"[resource link: {getattr(block, 'name', '')} {getattr(block, 'uri', '')}]".replace("  ", " "))
        elif kind == "resource":
            parts.append(_resource(getattr(block, "resource", None)))
        else:
            parts.append(f"[{kind} content: not shown]")
    return parts


def _decoded(data: str, mime: str) -> Part:
    try:
        return _Image(base64.b64decode(data, validate=True), mime)
    except (binascii.Error, ValueError):
        return f"[image ({mime}): not valid base64]"


def _resource(resource: Any) -> Part:
    uri = str(getattr(resource, "uri", ""))
    text = getattr(resource, "text", None)
    if isinstance(text, str):
        return f"[resource {uri}]\n{text}"
    mime = str(getattr(resource, "mime_type", "") or "")
    blob = getattr(resource, "blob", None)
    if mime.startswith("image/") and isinstance(blob, str):
        return _decoded(blob, mime)
    size = len(blob) * 3 // 4 if isinstance(blob, str) else 0
    return f"[resource {uri}: {mime or 'binary'}, about {size:,} bytes, not shown]"


def needs_images(result: Any) -> bool:
    return any(isinstance(part, _Image) for part in _parts(result))


def to_tool_result(result: Any, prepare: Callable[[bytes], PromptImage]) -> ToolResult:
    """The call's output; ``prepare`` makes an image fit (blocking: run this in a thread
    when ``needs_images``)."""
    items: list[dict[str, Any]] = []
    texts: list[str] = []
    images = 0
    for part in _parts(result):
        if isinstance(part, str):
            texts.append(part)
            items.append({"type": "input_text", "text": part})
            continue
        if images >= MAX_IMAGES:
            texts.append(f"[image ({part.mime}): more than {MAX_IMAGES} in one result, not shown]")
            items.append({"type": "input_text", "text": texts[-1]})
            continue
        try:
            image = prepare(part.data)
        except ImageError as exc:
            texts.append(f"[image ({part.mime}): {exc}]")
            items.append({"type": "input_text", "text": texts[-1]})
            continue
        images += 1
        items.append({"type": "input_image", "image_url": image.data_url()})
    failed = bool(getattr(result, "is_error", False))
    meta = {"mcp_error": True} if failed else {}
    body = "\n\n".join(texts)
    if failed:
        lead = "error: the tool reported a failure"
        body = f"{lead}:\n{body}" if body else lead
        items.insert(0, {"type": "input_text", "text": lead + ":" if texts else lead})
    if images:
        return ToolResult(items, ok=not failed, meta=meta)
    return ToolResult(body, ok=not failed, meta=meta)
