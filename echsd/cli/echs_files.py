"""``echs send --file PATH``: files read and checked before anything is sent.

A file is an image when its first bytes say so (PNG, JPEG, GIF, WebP, BMP, TIFF); it is
then prepared exactly as the ``view_image`` tool prepares one (scaled to 2048 px, at most
4 MiB encoded), so it fits a frame and the model's input. Anything else must be UTF-8 text
within the daemon's limit. A problem is a usage error (exit 2) naming the file.
"""

from __future__ import annotations

import os
from typing import Any

import click

from echsd.wire.params import MAX_ATTACHMENT_TEXT, MAX_ATTACHMENTS

IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"BM", b"II*\x00", b"MM\x00*")
MAX_READ_BYTES = 50 * 1024 * 1024  # what view_image reads at most too


def _is_image(head: bytes) -> bool:
    return head.startswith(IMAGE_MAGIC) or (head[:4] == b"RIFF" and head[8:12] == b"WEBP")


def attachment(path: str) -> dict[str, Any]:
    """The attachment ``thread.send`` takes for the file at ``path``."""
    name = os.path.basename(path) or path
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_READ_BYTES + 1)
    except OSError as exc:
        raise click.BadParameter(f"{path}: {exc.strerror or exc}", param_hint="--file") from None
    if len(data) > MAX_READ_BYTES:
        raise click.BadParameter(f"{path}: larger than {MAX_READ_BYTES // (1024 * 1024)} MiB", param_hint="--file")
    if _is_image(data[:16]):
        from echsd.tools.prompt_image import ImageError, prepare

        try:
            image = prepare(data)
        except ImageError as exc:
            raise click.BadParameter(f"{path}: {exc}", param_hint="--file") from None
        return {"type": "image", "name": name, "image_url": image.data_url()}
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise click.BadParameter(f"{path}: neither an image nor UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})", param_hint="--file") from None
    if len(text) > MAX_ATTACHMENT_TEXT:
        raise click.BadParameter(f"{path}: {len(text):,} characters; a text file may have at most {MAX_ATTACHMENT_TEXT:,}", param_hint="--file")
    return {"type": "text", "name": name, "text": text}


def attachments(paths: tuple[str, ...]) -> list[dict[str, Any]] | None:
    if len(paths) > MAX_ATTACHMENTS:
        raise click.BadParameter(f"{len(paths)} files; at most {MAX_ATTACHMENTS} go with one message", param_hint="--file")
    return [attachment(path) for path in paths] or None
