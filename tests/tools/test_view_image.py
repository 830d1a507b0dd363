"""view_image on real image files: Codex's pass-through, downscaling, formats and errors."""

from __future__ import annotations

import base64
import io
import os
import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image

from echsd.tools.base import ToolError, ToolResult
from echsd.tools.prompt_image import MAX_DIMENSION, MAX_ENCODED_BYTES, MAX_FILE_BYTES
from echsd.tools.view_image import SPEC, ViewImage
from tests.tools.readtools import call, call_without_file_privileges


def image_bytes(size: tuple[int, int], fmt: str, mode: str = "RGB", color: object = (200, 10, 10), **save: object) -> bytes:
    out = io.BytesIO()
    Image.new(mode, size, color).save(out, fmt, **save)  # type: ignore[arg-type]
    return out.getvalue()


def decoded(result: ToolResult) -> tuple[str, bytes]:
    """(mime, bytes) of the one input_image the result holds."""
    assert isinstance(result.output, list) and len(result.output) == 1
    item = result.output[0]
    assert item["type"] == "input_image" and set(item) == {"type", "image_url"}
    header, payload = item["image_url"].split(",", 1)
    assert header.startswith("data:") and header.endswith(";base64")
    return header[len("data:") : -len(";base64")], base64.b64decode(payload)


async def view(path: Path | str, cwd: Path) -> ToolResult:
    return await call(ViewImage(), {"path": str(path)}, cwd)


def test_spec_is_codex_shaped() -> None:
    assert SPEC.name == "view_image" and SPEC.parameters["required"] == ["path"]
    assert SPEC.parameters["properties"] == {"path": {"type": "string", "description": "Local filesystem path to an image file"}}
    assert SPEC.description.startswith("View a local image from the filesystem")


@pytest.mark.parametrize(("fmt", "mime"), [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("WEBP", "image/webp")])
async def test_small_images_pass_through_unchanged(tmp_path: Path, fmt: str, mime: str) -> None:
    original = image_bytes((64, 32), fmt)
    (tmp_path / "small.img").write_bytes(original)
    result = await view("small.img", tmp_path)  # relative to the cwd
    assert decoded(result) == (mime, original)
    assert result.meta["image"] == {"path": str(tmp_path / "small.img"), "mime": mime, "width": 64, "height": 32, "bytes": len(original)}


@pytest.mark.parametrize(
    ("size", "fmt", "expected_size", "mime"),
    [
        ((4096, 2048), "PNG", (2048, 1024), "image/png"),
        ((1024, 4096), "PNG", (512, 2048), "image/png"),
        ((3000, 1000), "JPEG", (2048, 683), "image/jpeg"),
        ((2049, 10), "WEBP", (2048, 10), "image/webp"),
    ],
)
async def test_large_images_are_downscaled_in_their_format(
    tmp_path: Path, size: tuple[int, int], fmt: str, expected_size: tuple[int, int], mime: str
) -> None:
    (tmp_path / "big").write_bytes(image_bytes(size, fmt))
    got_mime, data = decoded(await view(tmp_path / "big", tmp_path))
    assert got_mime == mime
    with Image.open(io.BytesIO(data)) as image:
        assert image.size == expected_size and max(image.size) <= MAX_DIMENSION
        assert image.format == fmt


async def test_other_formats_become_png(tmp_path: Path) -> None:
    (tmp_path / "a.gif").write_bytes(image_bytes((40, 20), "GIF", "P", 3))
    (tmp_path / "a.bmp").write_bytes(image_bytes((30, 30), "BMP"))
    for name in ("a.gif", "a.bmp"):
        mime, data = decoded(await view(tmp_path / name, tmp_path))
        assert mime == "image/png" and Image.open(io.BytesIO(data)).format == "PNG"


async def test_oversized_encodings_are_shrunk_to_the_byte_budget(tmp_path: Path) -> None:
    noise = Image.frombytes("RGB", (1600, 1600), os.urandom(1600 * 1600 * 3))
    out = io.BytesIO()
    noise.save(out, "PNG")
    assert len(out.getvalue()) > MAX_ENCODED_BYTES
    (tmp_path / "noise.png").write_bytes(out.getvalue())
    mime, data = decoded(await view(tmp_path / "noise.png", tmp_path))
    assert mime == "image/jpeg" and len(data) <= MAX_ENCODED_BYTES


async def test_errors(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"unable to locate image at `.*missing.png`: No such file or directory \(os error 2\)"):
        await view(tmp_path / "missing.png", tmp_path)
    with pytest.raises(ToolError, match=r"image path `.*` is not a file"):
        await view(tmp_path, tmp_path)
    os.mkfifo(tmp_path / "fifo.png")
    with pytest.raises(ToolError, match="is not a file"):
        await view(tmp_path / "fifo.png", tmp_path)
    (tmp_path / "text.png").write_text("not an image at all")
    with pytest.raises(ToolError, match=r"unable to process image at `.*text.png`: invalid or unsupported image data"):
        await view(tmp_path / "text.png", tmp_path)
    truncated = image_bytes((300, 300), "PNG", color=None)[:200]
    (tmp_path / "cut.png").write_bytes(truncated)
    with pytest.raises(ToolError, match="unable to process image"):
        await view(tmp_path / "cut.png", tmp_path)
    with pytest.raises(ToolError, match="path must not be empty"):
        await view("", tmp_path)


def test_unreadable_image(tmp_path: Path) -> None:
    (tmp_path / "private.png").write_bytes(image_bytes((4, 4), "PNG"))
    (tmp_path / "private.png").chmod(0)
    output = call_without_file_privileges("view_image", {"path": "private.png"}, tmp_path)
    assert output == f"error: unable to read image at `{tmp_path / 'private.png'}`: Permission denied (os error 13)"


async def test_files_over_50_mib_are_refused_unread(tmp_path: Path) -> None:
    with open(tmp_path / "huge.png", "wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(ToolError, match=f"image exceeds the {MAX_FILE_BYTES}-byte limit"):
        await view(tmp_path / "huge.png", tmp_path)


def png_header_only(width: int, height: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) + chunk(b"IEND", b"")


@pytest.mark.parametrize("side", [10_000, 40_000])
async def test_pixel_bombs_are_refused_before_decoding(tmp_path: Path, side: int) -> None:
    (tmp_path / "bomb.png").write_bytes(png_header_only(side, side))
    with pytest.raises(ToolError, match="image is too large to decode"):
        await view(tmp_path / "bomb.png", tmp_path)
