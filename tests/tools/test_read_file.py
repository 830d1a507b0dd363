"""read_file on real files: Codex's slice and indentation modes, bounds and errors."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from echsd.tools.base import ToolError
from echsd.tools.read_file import MAX_LIMIT, SPEC, ReadFile
from tests.tools.readtools import call_without_file_privileges, text


async def read(path: Path, **args: object) -> str:
    return await text(ReadFile(), {"file_path": str(path), **args}, path.parent)


def write(tmp_path: Path, content: str | bytes, name: str = "f.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def test_spec_is_codex_shaped() -> None:
    props = SPEC.parameters["properties"]
    assert SPEC.name == "read_file" and SPEC.parameters["required"] == ["file_path"]
    assert set(props) == {"file_path", "offset", "limit", "mode", "indentation"}
    assert set(props["indentation"]["properties"]) == {"anchor_line", "max_levels", "include_siblings", "include_header", "max_lines"}
    assert SPEC.parameters["additionalProperties"] is False and not SPEC.writes and SPEC.parallel_safe


async def test_reads_requested_range(tmp_path: Path) -> None:
    path = write(tmp_path, "alpha\nbeta\ngamma\n")
    assert await read(path, offset=2, limit=2) == "L2: beta\nL3: gamma"
    assert await read(path) == "L1: alpha\nL2: beta\nL3: gamma"
    assert await read(path, offset=1, limit=2) == "L1: alpha\nL2: beta"
    assert await read(path, offset=3.0, limit=10) == "L3: gamma"


async def test_default_limit_is_2000_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "".join(f"line {i}\n" for i in range(1, 2501)))
    lines = (await read(path)).split("\n")
    assert len(lines) == 2000 and lines[0] == "L1: line 1" and lines[-1] == "L2000: line 2000"
    assert (await read(path, offset=2400)).split("\n")[-1] == "L2500: line 2500"


async def test_limit_is_capped(tmp_path: Path) -> None:
    path = write(tmp_path, "x\n" * (MAX_LIMIT + 10))
    assert len((await read(path, limit=10**9)).split("\n")) == MAX_LIMIT


async def test_line_endings_encoding_and_last_line(tmp_path: Path) -> None:
    assert await read(write(tmp_path, "one\r\ntwo\r\n")) == "L1: one\nL2: two"
    assert await read(write(tmp_path, b"\xff\xfe\nplain\n")) == "L1: \ufffd\ufffd\nL2: plain"
    assert await read(write(tmp_path, "no newline at end")) == "L1: no newline at end"
    assert await read(write(tmp_path, "a\n\n\nb")) == "L1: a\nL2: \nL3: \nL4: b"


async def test_long_lines_are_cut_at_500_bytes_on_a_char_boundary(tmp_path: Path) -> None:
    assert await read(write(tmp_path, "x" * 550 + "\nnext\n")) == "L1: " + "x" * 500 + "\nL2: next"
    # 499 ASCII bytes then a 3-byte character: the character does not fit and is dropped whole.
    assert await read(write(tmp_path, "y" * 499 + "€€\n")) == "L1: " + "y" * 499


async def test_a_huge_single_line_is_streamed_not_loaded(tmp_path: Path) -> None:
    path = tmp_path / "huge.txt"
    with path.open("wb") as handle:
        handle.write(b"start")
        for _ in range(40):
            handle.write(b"z" * (1 << 20))
        handle.write(b"\nsecond line\n")
    output = await read(path)
    assert output == "L1: start" + "z" * 495 + "\nL2: second line"


async def test_offset_and_limit_errors(tmp_path: Path) -> None:
    path = write(tmp_path, "only\n")
    with pytest.raises(ToolError, match="offset exceeds file length"):
        await read(path, offset=3)
    with pytest.raises(ToolError, match="offset exceeds file length"):
        await read(write(tmp_path, "", "empty.txt"))
    with pytest.raises(ToolError, match="offset must be a 1-indexed line number"):
        await read(path, offset=0)
    with pytest.raises(ToolError, match="limit must be greater than zero"):
        await read(path, limit=0)
    for bad in (-1, 1.5):
        with pytest.raises(ToolError, match="offset must be a non-negative integer"):
            await read(path, offset=bad)
    with pytest.raises(ToolError, match="'offset' must be number, got boolean"):
        await read(path, offset=True)
    with pytest.raises(ToolError, match="'offset' must be number, got string"):
        await read(path, offset="2")
    with pytest.raises(ToolError, match='mode must be "slice" or "indentation"'):
        await read(path, mode="block")
    with pytest.raises(ToolError, match="unknown field"):
        await read(path, encoding="utf-8")


async def test_relative_paths_resolve_against_cwd(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", "hello\n", "r.txt")
    assert await text(ReadFile(), {"file_path": "sub/r.txt"}, tmp_path) == "L1: hello"


async def test_unreadable_paths_give_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"failed to read file: No such file or directory \(os error 2\)"):
        await read(tmp_path / "missing.txt")
    with pytest.raises(ToolError, match=r"failed to read file: Is a directory \(os error 21\)"):
        await text(ReadFile(), {"file_path": str(tmp_path)}, tmp_path)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(ToolError, match="No such file or directory"):
        await read(tmp_path / "dangling")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(ToolError, match="Too many levels of symbolic links"):
        await read(tmp_path / "loop")
    os.mkfifo(tmp_path / "fifo")  # opening it for reading must not block waiting for a writer
    with pytest.raises(ToolError, match="failed to read file: not a regular file"):
        await read(tmp_path / "fifo")
    with pytest.raises(ToolError, match="file_path must not be empty"):
        await text(ReadFile(), {"file_path": ""}, tmp_path)


async def test_symlinked_file_is_read(tmp_path: Path) -> None:
    target = write(tmp_path, "through the link\n", "target.txt")
    (tmp_path / "link.txt").symlink_to(target)
    assert await read(tmp_path / "link.txt") == "L1: through the link"


def test_permission_denied(tmp_path: Path) -> None:
    path = write(tmp_path, "secret\n")
    path.chmod(0)
    output = call_without_file_privileges("read_file", {"file_path": str(path)}, tmp_path)
    assert output == "error: failed to read file: Permission denied (os error 13)"


async def test_binary_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="binary file"):
        await read(write(tmp_path, b"text\x00more\n", "blob.bin"))
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
    with pytest.raises(ToolError, match="use view_image"):
        await read(write(tmp_path, png, "pic.png"))


PYTHON_SAMPLE = """class Foo:
    def __init__(self, size):
        self.size = size
    def double(self, value):
        if value is None:
            return 0
        result = value * self.size
        return result
class Bar:
    def compute(self):
        helper = Foo(2)
        return helper.double(5)
"""

CPP_SAMPLE = """#include <vector>
#include <string>

namespace sample {
class Runner {
public:
    void setup() {
        if (enabled_) {
            init();
        }
    }

    // Run the code
    int run() const {
        switch (mode_) {
            case Mode::Fast:
                return fast();
            case Mode::Slow:
                return slow();
            default:
                return fallback();
        }
    }

private:
    bool enabled_ = false;
    Mode mode_ = Mode::Fast;

    int fast() const {
        return 1;
    }
};
}  // namespace sample
"""


def numbered(first: int, text: str) -> str:
    return "\n".join(f"L{first + i}: {line}" for i, line in enumerate(text.split("\n")))


async def block(tmp_path: Path, content: str, offset: int = 1, limit: int | None = None, **indentation: object) -> str:
    args: dict[str, object] = {"mode": "indentation", "offset": offset, "indentation": indentation}
    if limit is not None:
        args["limit"] = limit
    return await read(write(tmp_path, content, "sample.src"), **args)


async def test_indentation_captures_the_block_around_the_anchor(tmp_path: Path) -> None:
    source = "fn outer() {\n    if cond {\n        inner();\n    }\n    tail();\n}\n"
    got = await block(tmp_path, source, offset=3, anchor_line=3, max_levels=1, include_siblings=False)
    assert got == numbered(2, "    if cond {\n        inner();\n    }")


async def test_indentation_expands_parents_by_levels(tmp_path: Path) -> None:
    source = "mod root {\n    fn outer() {\n        if cond {\n            inner();\n        }\n    }\n}\n"
    two = await block(tmp_path, source, offset=4, anchor_line=4, max_levels=2)
    assert two == numbered(2, "    fn outer() {\n        if cond {\n            inner();\n        }\n    }")
    three = await block(tmp_path, source, offset=4, anchor_line=4, max_levels=3)
    assert three == numbered(1, source.rstrip("\n"))


async def test_indentation_siblings_flag(tmp_path: Path) -> None:
    source = "fn wrapper() {\n    if first {\n        do_first();\n    }\n    if second {\n        do_second();\n    }\n}\n"
    alone = await block(tmp_path, source, anchor_line=3, max_levels=1)
    assert alone == numbered(2, "    if first {\n        do_first();\n    }")
    both = await block(tmp_path, source, anchor_line=3, max_levels=1, include_siblings=True)
    assert both == numbered(2, "    if first {\n        do_first();\n    }\n    if second {\n        do_second();\n    }")


async def test_indentation_python_sample(tmp_path: Path) -> None:
    got = await block(tmp_path, PYTHON_SAMPLE, offset=1, limit=200, anchor_line=7, include_siblings=True, max_levels=1)
    assert got == numbered(2, "\n".join(PYTHON_SAMPLE.split("\n")[1:8]))


async def test_indentation_cpp_samples_headers_and_siblings(tmp_path: Path) -> None:
    lines = CPP_SAMPLE.split("\n")
    shallow = await block(tmp_path, CPP_SAMPLE, offset=18, limit=200, anchor_line=18, max_levels=1)
    assert shallow == numbered(15, "\n".join(lines[14:22]))
    with_header = await block(tmp_path, CPP_SAMPLE, offset=18, limit=200, anchor_line=18, max_levels=2)
    assert with_header == numbered(13, "\n".join(lines[12:23]))
    no_header = await block(tmp_path, CPP_SAMPLE, offset=18, limit=200, anchor_line=18, max_levels=2, include_header=False)
    assert no_header == numbered(14, "\n".join(lines[13:23]))
    siblings = await block(
        tmp_path, CPP_SAMPLE, offset=18, limit=200, anchor_line=18, max_levels=2, include_header=False, include_siblings=True
    )
    assert siblings == numbered(7, "\n".join(lines[6:23]))


async def test_indentation_limits_and_defaults(tmp_path: Path) -> None:
    # The anchor defaults to offset; max_lines and limit cap the block; one line is just the anchor.
    got = await block(tmp_path, CPP_SAMPLE, offset=18, limit=3, max_levels=2)
    assert got == "L17:                 return fast();\nL18:             case Mode::Slow:\nL19:                 return slow();"
    assert await block(tmp_path, CPP_SAMPLE, offset=18, max_lines=1) == "L18:             case Mode::Slow:"
    # max_levels 0: no floor, the whole file is in reach (up to the limit).
    everything = await block(tmp_path, PYTHON_SAMPLE, offset=3, include_siblings=True)
    assert everything == numbered(1, PYTHON_SAMPLE.rstrip("\n"))


async def test_indentation_errors(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="anchor_line exceeds file length"):
        await block(tmp_path, "a\nb\n", anchor_line=5)
    with pytest.raises(ToolError, match="anchor_line exceeds file length"):
        await block(tmp_path, "")
    with pytest.raises(ToolError, match="anchor_line must be a 1-indexed line number"):
        await block(tmp_path, "a\n", anchor_line=0)
    with pytest.raises(ToolError, match="max_lines must be greater than zero"):
        await block(tmp_path, "a\n", max_lines=0)
    with pytest.raises(ToolError, match="unknown field"):
        await block(tmp_path, "a\n", depth=2)
    with pytest.raises(ToolError, match="include_siblings must be a boolean"):
        await block(tmp_path, "a\n", include_siblings="yes")
    with pytest.raises(ToolError, match="'indentation' must be object"):
        await read(write(tmp_path, "a\n"), mode="indentation", indentation=[1])


async def test_indentation_on_a_large_file_matches_a_small_one(tmp_path: Path) -> None:
    # Only the lines the walk can reach are kept; the answer is the one the same code gets
    # in a small file, shifted.
    def functions(count: int) -> str:
        return "".join(f"def f{i}():\n    return {i}\n\n" for i in range(count))

    def shape(output: str, shift: int) -> list[tuple[int, str]]:
        pairs = [line.split(": ", 1) for line in output.split("\n")]
        return [(int(number[1:]) - shift, re.sub(r"\d+", "#", text)) for number, text in pairs]

    small = await block(tmp_path, functions(10), offset=17, limit=50, max_levels=1)
    big = await block(tmp_path, functions(200_000), offset=300_002, limit=50, max_levels=1)
    assert "L300002:     return 100000" in big and len(big.split("\n")) > 3
    assert shape(big, 300_002 - 17) == shape(small, 0)
