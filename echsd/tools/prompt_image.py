"""An image file's bytes made fit for a model's input (sans-IO), as Codex prepares them.

Codex's rules: an image within 2048×2048 pixels in PNG, JPEG or WebP goes as it is; a
larger one is scaled down to fit 2048×2048 (aspect kept, dimensions rounded) and
re-encoded in its own format (JPEG at quality 85, WebP lossless), anything else (GIF,
and here also BMP, TIFF, ...) as PNG; files over 50 MiB are refused. On top of that, an
image whose encoding would still pass ``MAX_ENCODED_BYTES`` is re-encoded as JPEG and
shrunk until it fits: every later request of the thread carries it again, and events
holding it must fit in a wire frame.

Pillow is imported when the first image is prepared, not with the module: the daemon's
start does not pay for it.
"""

from __future__ import annotations

import base64
import io
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import Image

MAX_DIMENSION = 2048
MAX_FILE_BYTES = 50 * 1024 * 1024
MAX_PIXELS = 1024 * 1024 * 1024 // 4 // 3  # Pillow's own MAX_IMAGE_PIXELS, ~89 Mpx: larger ones are refused before decoding
MAX_ENCODED_BYTES = 4 * 1024 * 1024
JPEG_QUALITY = 85
PASS_THROUGH = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}


class ImageError(ValueError):
    """The bytes are not an image we can give the model; the message says why."""


@dataclass(frozen=True)
class PromptImage:
    data: bytes
    mime: str
    width: int
    height: int

    def data_url(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"


def prepare(data: bytes) -> PromptImage:
    """Decode, downscale and re-encode as needed; raises ``ImageError``."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    if len(data) > MAX_FILE_BYTES:
        raise ImageError(f"image exceeds the {MAX_FILE_BYTES}-byte limit")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # we refuse those below
            image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as exc:
        raise ImageError(f"image is too large to decode ({exc})") from None
    except UnidentifiedImageError:
        raise ImageError("invalid or unsupported image data (not a format Pillow can read)") from None
    except OSError as exc:
        raise ImageError(f"invalid or unsupported image data ({exc})") from None
    width, height = image.size
    if width * height > MAX_PIXELS:
        raise ImageError(f"image is too large to decode ({width}x{height} pixels)")
    source = image.format or ""
    animated = bool(getattr(image, "is_animated", False))
    fits = width <= MAX_DIMENSION and height <= MAX_DIMENSION
    if fits and source in PASS_THROUGH and not animated and len(data) <= MAX_ENCODED_BYTES:
        _check_decodes(image)
        return PromptImage(data, PASS_THROUGH[source], width, height)
    try:
        if source == "JPEG" and not fits:
            image.draft("RGB", _fit(width, height, MAX_DIMENSION))  # decode at a reduced scale
        image.load()
        frame = ImageOps.exif_transpose(image) or image
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        raise ImageError(f"invalid or unsupported image data ({exc})") from None
    frame = _scaled(frame, MAX_DIMENSION)
    target = source if source in PASS_THROUGH and not animated else "PNG"
    encoded = _encode(frame, target)
    while len(encoded) > MAX_ENCODED_BYTES:
        target = "JPEG"
        frame = frame.resize(_fit(*frame.size, int(max(frame.size) * 0.75)), Image.Resampling.BILINEAR)
        encoded = _encode(frame, target)
    return PromptImage(encoded, PASS_THROUGH[target], *frame.size)


def _check_decodes(image: Image.Image) -> None:
    from PIL import Image

    try:
        image.load()
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        raise ImageError(f"invalid or unsupported image data ({exc})") from None


def _fit(width: int, height: int, bound: int) -> tuple[int, int]:
    """The size fitting ``bound``×``bound`` with the aspect kept (the image crate's rounding)."""
    ratio = min(bound / width, bound / height)
    return max(round(width * ratio), 1), max(round(height * ratio), 1)


def _scaled(image: Image.Image, bound: int) -> Image.Image:
    from PIL import Image

    if image.width <= bound and image.height <= bound:
        return image
    return image.resize(_fit(image.width, image.height, bound), Image.Resampling.BILINEAR)


def _encode(image: Image.Image, target: str) -> bytes:
    out = io.BytesIO()
    if target == "JPEG":
        _flatten(image).save(out, "JPEG", quality=JPEG_QUALITY)
    elif target == "WEBP":
        image.save(out, "WEBP", lossless=True)
    else:
        if image.mode not in ("1", "L", "LA", "P", "RGB", "RGBA", "I", "I;16"):
            image = image.convert("RGBA")
        image.save(out, "PNG")
    return out.getvalue()


def _flatten(image: Image.Image) -> Image.Image:
    """RGB for JPEG: transparency over white, palettes and other modes converted."""
    from PIL import Image

    if image.mode == "RGB":
        return image
    if image.mode in ("RGBA", "LA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        background = Image.new("RGB", rgba.size, (255, 255, 255))
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return image.convert("RGB")
