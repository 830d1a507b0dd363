"""grep_files on real trees, with ripgrep and with the Python fallback: same answers."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from echsd.tools.base import ToolError
from echsd.tools.fsaccess import Budget
from echsd.tools.grep_files import MAX_LIMIT, SPEC, GrepFiles, python_search, ripgrep
from tests.tools.search_fixtures import RG, own_git_config, searcher  # noqa: F401 (fixtures)
from tests.tools.readtools import call, call_without_file_privileges, text

pytestmark = pytest.mark.usefixtures("own_git_config")


def make(root: Path, files: dict[str, str | bytes], mtimes: dict[str, int] | None = None) -> None:
    for relative, content in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)
    stamp = 1_700_000_000
    for relative in files:
        os.utime(root / relative, (stamp, stamp))  # equal times unless said otherwise
    for relative, when in (mtimes or {}).items():
        os.utime(root / relative, (when, when))


async def grep(cwd: Path, pattern: str, **args: object) -> list[str]:
    output = await text(GrepFiles(), {"pattern": pattern, **args}, cwd)
    return [] if output == "No matches found." else output.split("\n")


def test_spec_is_codex_shaped() -> None:
    assert SPEC.name == "grep_files" and SPEC.parameters["required"] == ["pattern"]
    assert set(SPEC.parameters["properties"]) == {"pattern", "include", "path", "limit"}
    assert SPEC.description == "Finds files whose contents match the pattern and lists them by modification time."


async def test_newest_first_then_by_path(tmp_path: Path, searcher: str) -> None:
    make(
        tmp_path,
        {"old.txt": "needle", "new.txt": "needle", "mid.txt": "needle", "tie_b.txt": "needle", "tie_a.txt": "needle", "no.txt": "hay"},
        {"old.txt": 1_000, "mid.txt": 2_000, "new.txt": 3_000},
    )
    result = await call(GrepFiles(), {"pattern": "needle"}, tmp_path)
    assert result.meta["searcher"] == searcher and result.ok
    names = [Path(line).name for line in str(result.output).split("\n")]
    assert names == ["tie_a.txt", "tie_b.txt", "new.txt", "mid.txt", "old.txt"]
    assert str(result.output).split("\n")[0] == str(tmp_path / "tie_a.txt")  # absolute paths, as Codex shows
    assert [Path(p).name for p in await grep(tmp_path, "needle", limit=2)] == ["tie_a.txt", "tie_b.txt"]


async def test_no_matches(tmp_path: Path, searcher: str) -> None:
    make(tmp_path, {"a.txt": "hay"})
    result = await call(GrepFiles(), {"pattern": "needle"}, tmp_path)
    assert result.output == "No matches found." and result.ok is False


async def test_include_globs(tmp_path: Path, searcher: str) -> None:
    make(
        tmp_path,
        {
            "main.rs": "fn needle()",
            "web/app.ts": "needle",
            "web/view.tsx": "needle",
            "src/deep/x.ts": "needle",
            "README.md": "needle",
        },
    )

    async def names(include: str) -> list[str]:
        return sorted(os.path.relpath(p, tmp_path) for p in await grep(tmp_path, "needle", include=include))

    assert await names("*.rs") == ["main.rs"]
    assert await names("*.{ts,tsx}") == ["src/deep/x.ts", "web/app.ts", "web/view.tsx"]
    assert await names("src/**/*.ts") == ["src/deep/x.ts"]
    assert await names("!*.md") == ["main.rs", "src/deep/x.ts", "web/app.ts", "web/view.tsx"]
    assert await names("  ") == await names("*")  # a blank include is no filter


async def test_ignore_files_hidden_files_and_overrides(tmp_path: Path, searcher: str) -> None:
    make(
        tmp_path,
        {
            ".gitignore": "build/\n*.log\n!keep.log\n",
            "src/.ignore": "generated.txt\n",
            "src/code.txt": "needle",
            "src/generated.txt": "needle",
            "build/out.txt": "needle",
            "app.log": "needle",
            "keep.log": "needle",
            ".hidden/inside.txt": "needle",
            ".dotfile.txt": "needle",
        },
    )

    async def names(**args: object) -> list[str]:
        return sorted(os.path.relpath(p, tmp_path) for p in await grep(tmp_path, "needle", **args))

    # Not a git repository: .gitignore does not apply, .ignore does, hidden files are skipped.
    assert await names() == ["app.log", "build/out.txt", "keep.log", "src/code.txt"]
    (tmp_path / ".git").mkdir()
    assert await names() == ["keep.log", "src/code.txt"]
    # An include glob overrides ignore rules and hiddenness for the files it names.
    assert await names(include="*.log") == ["app.log", "keep.log"]
    assert await names(include="*.txt") == [".dotfile.txt", "src/code.txt", "src/generated.txt"]
    # Parent directories' rules apply when searching below them.
    assert await names(path="src") == ["src/code.txt"]


async def test_git_exclude_and_global_excludes(tmp_path: Path, searcher: str, own_git_config: Path) -> None:
    make(tmp_path, {".git/info/exclude": "excluded.txt\n", "excluded.txt": "needle", "global.txt": "needle", "kept.txt": "needle"})
    (own_git_config / ".gitconfig").write_text(f"[core]\n\texcludesFile = {own_git_config / 'ignore-globally'}\n")
    (own_git_config / "ignore-globally").write_text("global.txt\n")
    assert [Path(p).name for p in await grep(tmp_path, "needle")] == ["kept.txt"]


async def test_binary_files_and_encodings(tmp_path: Path, searcher: str) -> None:
    make(
        tmp_path,
        {
            "blob.bin": b"needle\x00\x01\x02",
            "text.txt": "a needle here",
            "utf16.txt": "\ufeffneedle in utf-16".encode("utf-16-le"),
            "latin1.txt": b"caf\xe9 needle",
        },
    )
    assert sorted(Path(p).name for p in await grep(tmp_path, "needle")) == ["latin1.txt", "text.txt", "utf16.txt"]
    # A file named as the path is searched even if binary.
    assert await grep(tmp_path, "needle", path="blob.bin") == [str(tmp_path / "blob.bin")]


async def test_symlinks_below_the_path_are_not_followed(tmp_path: Path, searcher: str) -> None:
    make(tmp_path, {"real/a.txt": "needle"})
    os.symlink(tmp_path / "real", tmp_path / "linkdir")
    os.symlink(tmp_path / "real" / "a.txt", tmp_path / "link.txt")
    assert await grep(tmp_path, "needle") == [str(tmp_path / "real" / "a.txt")]
    assert await grep(tmp_path, "needle", path="linkdir") == [str(tmp_path / "linkdir" / "a.txt")]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"\bfoo\b", ["words.txt"]),
        ("(?i)FOO BAR", ["words.txt"]),
        ("[[:digit:]]{3}", ["digits.txt"]),
        (r"\x{263A}", ["smile.txt"]),
        (r"\Afoo", ["words.txt"]),
        (r"end\z", ["digits.txt"]),
        ("^$", ["blank.txt"]),
        ("x(?i)Y|zzz", ["mixed.txt"]),
        (r"\<bar\>", ["words.txt"]),
        ("  foo bar  ", ["words.txt"]),  # trimmed, as Codex trims it
    ],
)
async def test_rust_regex_syntax(tmp_path: Path, searcher: str, pattern: str, expected: list[str]) -> None:
    make(
        tmp_path,
        {
            "words.txt": "foo bar\nfoobar\n",
            "digits.txt": "call 555 now\nthe end\n",
            "smile.txt": "so \u263a\n",
            "blank.txt": "a\n\nb\n",
            "mixed.txt": "XY\nxy\n",
        },
    )
    assert sorted(Path(p).name for p in await grep(tmp_path, pattern)) == expected


async def test_argument_errors(tmp_path: Path, searcher: str) -> None:
    make(tmp_path, {"a.txt": "needle"})
    with pytest.raises(ToolError, match="pattern must not be empty"):
        await grep(tmp_path, "   ")
    with pytest.raises(ToolError, match="limit must be greater than zero"):
        await grep(tmp_path, "needle", limit=0)
    with pytest.raises(ToolError, match=r"unable to access `.*missing`: No such file or directory \(os error 2\)"):
        await grep(tmp_path, "needle", path="missing")
    with pytest.raises(ToolError, match="look-around"):
        await grep(tmp_path, "needle(?=x)")
    with pytest.raises(ToolError, match="rg failed|invalid regex"):
        await grep(tmp_path, "needle(")
    with pytest.raises(ToolError, match=r"'pattern' must be string"):
        await grep(tmp_path, 42)  # type: ignore[arg-type]
    with pytest.raises(ToolError, match="working directory `.*gone` is not an existing directory"):
        await grep(tmp_path / "gone", "needle", path=str(tmp_path))


def test_unreadable_files_and_directories_are_skipped(tmp_path: Path, searcher: str) -> None:
    make(tmp_path, {"open.txt": "needle", "closed.txt": "needle", "locked/inside.txt": "needle"})
    (tmp_path / "closed.txt").chmod(0)
    (tmp_path / "locked").chmod(0)
    try:
        output = call_without_file_privileges("grep_files", {"pattern": "needle"}, tmp_path)
    finally:
        (tmp_path / "locked").chmod(0o755)
    assert output == str(tmp_path / "open.txt")


async def test_limit_is_capped_at_2000(tmp_path: Path, searcher: str) -> None:
    make(tmp_path, {f"d{i // 500}/f{i}.txt": "needle" for i in range(MAX_LIMIT + 50)})
    assert len(await grep(tmp_path, "needle", limit=10_000)) == MAX_LIMIT
    assert len(await grep(tmp_path, "needle")) == 100


# Both searchers on many generated trees: the fallback must agree with ripgrep.

NAMES = ["a.txt", "b.rs", ".h.txt", "c.log", "d.md", "keep.log", "e.ts"]
DIRS = ["", "src/", "src/deep/", ".hid/", "build/", "node/x/"]
IGNORE_LINES = ["*.log", "!keep.log", "build/", "/src/deep", "*.md", "node", "src/*.rs", "**/e.ts", ".h*", "!.h.txt", "d?.md", "[ab].*"]
INCLUDES = [None, "*.txt", "*.{rs,ts}", "src/**", "!*.log", "**/deep/*", ".h*"]


def random_tree(root: Path, rng: random.Random) -> None:
    for directory in rng.sample(DIRS, rng.randint(2, len(DIRS))):
        for name in rng.sample(NAMES, rng.randint(1, 4)):
            path = root / directory / name
            path.parent.mkdir(parents=True, exist_ok=True)
            content = rng.choice(["needle\n", "hay\n", "x\nneedle", b"needle\x00", "Needle\n"])
            path.write_bytes(content.encode() if isinstance(content, str) else content)
    for directory in rng.sample(DIRS, 3):
        kind = rng.choice([".gitignore", ".ignore", ".rgignore"])
        if (root / directory).is_dir():
            (root / directory / kind).write_text("\n".join(rng.sample(IGNORE_LINES, rng.randint(1, 4))) + "\n")
    if rng.random() < 0.6:
        (root / ".git").mkdir(exist_ok=True)


@pytest.mark.skipif(RG is None, reason="ripgrep (rg) is not installed")
async def test_fallback_agrees_with_ripgrep_on_generated_trees(tmp_path: Path) -> None:
    assert RG is not None
    rng = random.Random(20261123)
    for case in range(40):
        root = tmp_path / f"t{case}"
        root.mkdir()
        random_tree(root, rng)
        include = rng.choice(INCLUDES)
        sub = rng.choice(["", "src"])
        search = str(root / sub) if (root / sub).is_dir() else str(root)
        pattern = rng.choice(["needle", "(?i)needle", "^x$", "eed"])
        by_rg = sorted(await ripgrep(RG, pattern, include, search, root, 30.0))
        by_python = sorted(python_search(pattern, include, search, root, Budget(30.0, "grep_files")))
        assert by_python == by_rg, (case, pattern, include, search)
