"""The apply_patch tool adapter: definitions as Codex offers them, runs, errors, interception."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from echsd.tools.apply_patch import ApplyPatchTool
from echsd.tools.apply_patch.definitions import LARK_GRAMMAR
from echsd.tools.args import check_arguments, parse_arguments
from echsd.tools.base import ToolContext, ToolError
from tests.tools.patch_trees import make_tree, snapshot

PATCH = "*** Begin Patch\n*** Update File: a.txt\n@@\n-old\n+new\n*** End Patch\n"


def context(cwd: Path, writes: str = "allow") -> ToolContext:
    async def sink(stream: str, chunk: str) -> None:
        raise AssertionError("apply_patch streams no output")

    return ToolContext("thr_0000000000000000", "turn_x", "call_x", cwd, sink, 30.0, writes=writes)


def test_function_definition_matches_codex_shape() -> None:
    definition = ApplyPatchTool.spec.to_model()
    assert definition["type"] == "function" and definition["name"] == "apply_patch" and definition["strict"] is False
    assert definition["parameters"] == {
        "type": "object",
        "properties": {"input": {"type": "string", "description": "The entire contents of the apply_patch command"}},
        "required": ["input"],
        "additionalProperties": False,
    }
    assert definition["description"].startswith("Use the `apply_patch` tool to edit files.")
    assert "*** Update File: " in definition["description"] and "NEVER ABSOLUTE" in definition["description"]


def test_custom_definition_matches_codex_shape() -> None:
    definition = ApplyPatchTool.custom_definition()
    assert list(definition) == ["type", "name", "description", "format"]
    assert definition["type"] == "custom" and definition["name"] == "apply_patch"
    assert "FREEFORM tool, so do not wrap the patch in JSON" in definition["description"]
    assert definition["format"] == {"type": "grammar", "syntax": "lark", "definition": LARK_GRAMMAR}
    assert LARK_GRAMMAR.startswith("start: begin_patch hunk+ end_patch\n") and LARK_GRAMMAR.endswith("%import common.LF\n")


async def test_run_applies_and_reports(tmp_path: Path) -> None:
    make_tree(tmp_path, {"a.txt": "old\n"})
    args = check_arguments(parse_arguments({"input": PATCH}), ApplyPatchTool.spec.parameters)
    result = await ApplyPatchTool().run(args, context(tmp_path))
    assert result.ok and result.output == "Success. Updated the following files:\nM a.txt\n"
    assert result.meta == {"changes": [{"op": "M", "path": "a.txt"}], "dry_run": False}
    assert (tmp_path / "a.txt").read_text() == "new\n"


async def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    make_tree(tmp_path, {"a.txt": "old\n"})
    result = await ApplyPatchTool().run({"input": PATCH}, context(tmp_path, writes="dry-run"))
    assert result.output.startswith("Dry run: no file was changed.")
    assert "-old\n+new\n" in result.output and result.meta["dry_run"] is True
    assert (tmp_path / "a.txt").read_text() == "old\n"


async def test_writes_deny_changes_nothing(tmp_path: Path) -> None:
    make_tree(tmp_path, {"a.txt": "old\n"})
    before = snapshot(tmp_path)
    with pytest.raises(ToolError, match="writes=deny"):
        await ApplyPatchTool().run({"input": PATCH}, context(tmp_path, writes="deny"))
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"input": "not a patch"}, "Invalid patch: The first line of the patch must be '*** Begin Patch'"),
        ({"input": PATCH.replace("-old", "-absent")}, "Failed to find expected lines in a.txt"),
        ({"input": 42}, "needs the patch text as a string"),
    ],
)
async def test_errors_are_for_the_model(tmp_path: Path, args: dict, message: str) -> None:
    make_tree(tmp_path, {"a.txt": "old\n"})
    with pytest.raises(ToolError) as caught:
        await ApplyPatchTool().run(args, context(tmp_path))
    assert message in str(caught.value)
    if "patch" not in message:
        assert "No file was changed" in str(caught.value)
    assert (tmp_path / "a.txt").read_text() == "old\n"


async def test_missing_cwd_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="does not exist"):
        await ApplyPatchTool().run({"input": PATCH}, context(tmp_path / "nope"))


async def test_exec_command_interception_uses_workdir_and_cd(tmp_path: Path) -> None:
    make_tree(tmp_path, {"w/sub/a.txt": "old\n"})
    tool = ApplyPatchTool()
    cmd = f"cd sub && apply_patch <<'EOF'\n{PATCH}EOF\n"
    result = await tool.intercept_exec_command({"cmd": cmd, "workdir": "w"}, context(tmp_path))
    assert result is not None and result.output == "Success. Updated the following files:\nM a.txt\n"
    assert (tmp_path / "w/sub/a.txt").read_text() == "new\n"
    before = snapshot(tmp_path)
    assert await tool.intercept_exec_command({"cmd": "cat a.txt"}, context(tmp_path)) is None
    assert await tool.intercept_exec_command({"cmd": None}, context(tmp_path)) is None
    with pytest.raises(ToolError, match="Failed to read file to update a.txt"):
        await tool.intercept_exec_command({"cmd": f"apply_patch <<'EOF'\n{PATCH}EOF"}, context(tmp_path))
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "patch",
    [
        "*** Begin Patch\n*** Add File: a\0b.txt\n+x\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: c\0d.txt\n@@\n-old\n+new\n*** End Patch",
    ],
)
async def test_a_nul_in_a_path_is_a_clear_error_not_a_crash(daemon: Any, workdir: Path, patch: str) -> None:
    from tests.helpers import Watch, mock_directive

    (workdir / "a.txt").write_text("old\n")
    call = {"name": "apply_patch", "arguments": {"input": patch}}
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive([{"calls": [call]}, {"text": "ok"}]))
        await watch.wait_type("turn.completed")
    [completed] = [e.data for e in watch.of_type("tool.completed")]
    assert not completed["ok"] and "the path contains a NUL character" in completed["output"], completed["output"]
    assert "crashed" not in completed["output"]
    assert (workdir / "a.txt").read_text() == "old\n"
