"""``read_file``: a text file's lines, numbered ``L<n>: ``, the way Codex's read_file returns them.

Same arguments, defaults and output as Codex: ``offset`` (1-based, default 1), ``limit``
(default 2000), ``mode`` ``slice`` (a range of lines) or ``indentation`` (the code block
around an anchor line, see ``indent_block.py``); each line is cut to 500 bytes; CRLF ends
are dropped; invalid UTF-8 shows as U+FFFD. Unlike Codex a relative ``file_path`` is
resolved against the thread's cwd instead of refused.

Memory stays bounded whatever the file: lines are streamed, only the first bytes of an
over-long line are kept, at most ``MAX_LIMIT`` lines are returned, and indentation mode
keeps only the lines its walk can reach. Binary files (NUL bytes) get an error, not noise.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from echsd.tools.base import ToolContext, ToolError, ToolResult, ToolSpec
from echsd.tools.fsaccess import NOTHING_HIDDEN, Budget, HiddenPaths, hidden_paths, hidden_roots, lossy_prefix, off_loop, open_regular, os_error_text, refuse_hidden, resolve, whole_number
from echsd.tools.indent_block import LineInfo, block_range, is_comment, measure_indent

DEFAULT_LIMIT = 2000
MAX_LIMIT = 20_000  # lines one call returns at most, whatever ``limit`` asks
MAX_LINE_BYTES = 500
KEEP_BYTES = 4096  # of each line: the display and the indentation come from these
SKIP_CHUNK = 1 << 20
SNIFF_BYTES = 8192
IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"RIFF")

_INDENTATION_FIELDS = {
    "anchor_line": {"type": "number", "description": "Anchor line to center the indentation lookup on (defaults to offset)."},
    "max_levels": {"type": "number", "description": "How many parent indentation levels (smaller indents) to include."},
    "include_siblings": {
        "type": "boolean",
        "description": "When true, include additional blocks that share the anchor indentation.",
    },
    "include_header": {
        "type": "boolean",
        "description": "Include doc comments or attributes directly above the selected block.",
    },
    "max_lines": {"type": "number", "description": "Hard cap on the number of lines returned when using indentation mode."},
}

SPEC = ToolSpec(
    name="read_file",
    description="Reads a local file with 1-indexed line numbers, supporting slice and indentation-aware block modes.",
    parameters={
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "Absolute path to the file"},
            "offset": {"type": "number", "description": "The line number to start reading from. Must be 1 or greater."},
            "limit": {"type": "number", "description": "The maximum number of lines to return."},
            "mode": {
                "type": "string",
                "description": 'Optional mode selector: "slice" for simple ranges (default) or "indentation" '
                "to expand around an anchor line.",
            },
            "indentation": {"type": "object", "properties": _INDENTATION_FIELDS, "additionalProperties": False},
        },
        "required": ["file_path"],
        "additionalProperties": False,
    },
)


@dataclass(frozen=True)
class Indentation:
    anchor_line: int
    max_levels: int
    include_siblings: bool
    include_header: bool
    max_lines: int


@dataclass(frozen=True)
class ReadRequest:
    path: Path
    offset: int
    limit: int
    indentation: Indentation | None  # None: slice mode


class ReadFile:
    spec = SPEC

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        request = parse_request(args, ctx.cwd)
        hidden = hidden_paths(ctx.sandbox)
        lines = await off_loop(lambda budget: read_lines(request, budget, hidden), ctx.timeout_s, "read_file")
        return ToolResult("\n".join(lines))


def parse_request(args: dict[str, Any], cwd: Path) -> ReadRequest:
    offset = whole_number(args, "offset", 1)
    limit = whole_number(args, "limit", DEFAULT_LIMIT)
    if offset == 0:
        raise ToolError("offset must be a 1-indexed line number")
    if limit == 0:
        raise ToolError("limit must be greater than zero")
    if not args["file_path"]:
        raise ToolError("file_path must not be empty")
    path = resolve(cwd, args["file_path"])
    mode = args.get("mode") or "slice"
    if mode not in ("slice", "indentation"):
        raise ToolError(f'mode must be "slice" or "indentation", got {mode!r}')
    indentation = _parse_indentation(args.get("indentation") or {}, offset, limit) if mode == "indentation" else None
    return ReadRequest(path, offset, min(limit, MAX_LIMIT), indentation)


def _parse_indentation(raw: dict[str, Any], offset: int, limit: int) -> Indentation:
    unknown = sorted(set(raw) - set(_INDENTATION_FIELDS))
    if unknown:
        raise ToolError(f"invalid arguments: unknown field(s) in indentation: {', '.join(unknown)}")
    flags = {}
    for name, default in (("include_siblings", False), ("include_header", True)):
        value = raw.get(name)
        if value is not None and not isinstance(value, bool):
            raise ToolError(f"indentation.{name} must be a boolean, got {value!r}")
        flags[name] = default if value is None else value
    anchor_line = whole_number(raw, "anchor_line", offset)
    if anchor_line == 0:
        raise ToolError("anchor_line must be a 1-indexed line number")
    max_lines = whole_number(raw, "max_lines", limit)
    if max_lines == 0:
        raise ToolError("max_lines must be greater than zero")
    return Indentation(anchor_line, whole_number(raw, "max_levels", 0), flags["include_siblings"], flags["include_header"], max_lines)


def read_lines(request: ReadRequest, budget: Budget, hidden: HiddenPaths = NOTHING_HIDDEN) -> list[str]:
    """The numbered lines the request asks for (runs in a worker thread); none of a path
    the thread's sandbox ``hidden``."""
    try:
        fd = open_regular(request.path)
    except OSError as exc:
        raise ToolError(f"failed to read file: {os_error_text(exc)}") from None
    with os.fdopen(fd, "rb", buffering=1 << 16) as handle:
        refuse_hidden(request.path, hidden_roots(hidden), fd=fd)
        try:
            _refuse_binary(fd)
            if request.indentation is None:
                return _slice(handle, request.offset, request.limit, budget)
            return _block(handle, request.indentation, request.limit, budget)
        except OSError as exc:
            raise ToolError(f"failed to read file: {os_error_text(exc)}") from None


def _refuse_binary(fd: int) -> None:
    head = os.pread(fd, SNIFF_BYTES, 0)
    if b"\x00" not in head:
        return
    hint = " (an image: use view_image to look at it)" if head.startswith(IMAGE_MAGIC) else ""
    raise ToolError(f"failed to read file: it is a binary file (NUL bytes in its first {SNIFF_BYTES} bytes){hint}; read_file reads text")


def _slice(handle: BinaryIO, offset: int, limit: int, budget: Budget) -> list[str]:
    collected: list[str] = []
    seen = 0
    for seen, (head, _rest_blank) in enumerate(_raw_lines(handle, budget, skip_until=offset), start=1):
        if seen < offset:
            continue
        collected.append(f"L{seen}: {display(head)}")
        if len(collected) == limit:
            break
    if seen < offset:
        raise ToolError("offset exceeds file length")
    return collected


def _block(handle: BinaryIO, options: Indentation, limit: int, budget: Budget) -> list[str]:
    bound = min(limit, options.max_lines)
    first_kept = max(options.anchor_line - bound, 1)
    last_kept = options.anchor_line + bound
    window: list[LineInfo] = []
    previous_indent = 0
    for number, (head, rest_blank) in enumerate(_raw_lines(handle, budget, skip_until=0), start=1):
        text = head.decode("utf-8", "replace")
        blank = rest_blank and not text.strip()
        indent = previous_indent if blank else measure_indent(text)
        previous_indent = indent
        if number >= first_kept:
            window.append(LineInfo(number, display(head), indent, blank, not blank and is_comment(text)))
        if number >= last_kept:
            break
    anchor = options.anchor_line - first_kept
    if not window or anchor >= len(window):
        raise ToolError("anchor_line exceeds file length")
    final_limit = min(bound, window[-1].number)
    chosen = block_range(window, anchor, final_limit, options.max_levels, options.include_siblings, options.include_header)
    return [f"L{window[i].number}: {window[i].display}" for i in chosen]


def _raw_lines(handle: BinaryIO, budget: Budget, skip_until: int) -> Iterator[tuple[bytes, bool]]:
    """Each line as (its first ``KEEP_BYTES`` without the line end, whether the rest is blank).

    Lines before ``skip_until`` are counted but not kept (their head is empty).
    """
    number = 0
    while True:
        number += 1
        keep = KEEP_BYTES if number >= skip_until else 0
        head = handle.readline(keep) if keep else b""
        if keep and not head:
            return
        rest_blank = True
        if head.endswith(b"\n"):
            head = head[:-1]
            if head.endswith(b"\r"):
                head = head[:-1]
        elif not keep or len(head) == KEEP_BYTES:
            seen_any = bool(head)
            while True:
                part = handle.readline(SKIP_CHUNK)
                if not part:
                    break
                seen_any = True
                if rest_blank and part.strip():
                    rest_blank = False
                if part.endswith(b"\n"):
                    break
                budget.check()
            if not seen_any:
                return
        if number % 4096 == 0:
            budget.check()
        yield head, rest_blank


def display(raw: bytes) -> str:
    return lossy_prefix(raw, MAX_LINE_BYTES)
