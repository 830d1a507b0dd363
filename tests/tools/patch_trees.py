"""Directory trees for apply_patch tests: snapshot one, build one from a mapping."""

from __future__ import annotations

from pathlib import Path

Tree = dict[str, bytes | None]  # relative path -> file bytes, or None for a directory


def snapshot(root: Path) -> Tree:
    """Every directory and regular file below ``root`` (nothing normalised)."""
    if not root.is_dir():
        return {}
    return {str(path.relative_to(root)): None if path.is_dir() else path.read_bytes() for path in root.rglob("*")}


def make_tree(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
