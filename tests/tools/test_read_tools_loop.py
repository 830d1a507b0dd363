"""The four read-only tools through the real tool loop: the mock model calls them with the
arguments Codex-trained models send, and the next request carries their outputs."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from tests.helpers import Watch, check_thread_invariants, mock_directive
from tests.tools.search_fixtures import own_git_config, searcher  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("own_git_config")


async def run_turn(daemon: Any, workdir: Path, calls: list[dict[str, Any]]) -> tuple[Watch, dict[str, Any]]:
    """One turn whose first model response makes ``calls``; returns its events and outputs by call_id."""
    thread = await daemon.ops.create_thread(cwd=str(workdir))
    tid = thread["thread_id"]
    for index, call in enumerate(calls):
        call.setdefault("call_id", f"call_{index}")
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, "go\n" + mock_directive([{"calls": calls}, {"text": "done"}]))
        done = await watch.wait_type("turn.completed")
    assert done.data["final_text"] == "done"
    await check_thread_invariants(daemon, tid)
    return watch, tid


def outputs_sent(mock_upstream: Any) -> dict[str, Any]:
    """The function_call_output items of the last request to the model, by call_id."""
    items = mock_upstream.requests[-1].body["input"]
    return {item["call_id"]: item["output"] for item in items if item.get("type") == "function_call_output"}


def make_workspace(workdir: Path) -> Path:
    (workdir / "src").mkdir()
    (workdir / "src" / "app.py").write_text("import os\n\n\ndef main():\n    print('needle')\n    return 0\n")
    (workdir / "src" / "util.py").write_text("def helper():\n    return 'hay'\n")
    (workdir / "README.md").write_text("needle in the readme\n")
    image = io.BytesIO()
    Image.new("RGB", (20, 10), (0, 128, 255)).save(image, "PNG")
    (workdir / "shot.png").write_bytes(image.getvalue())
    return workdir


async def test_codex_shaped_calls_reach_the_next_request(daemon: Any, workdir: Path, mock_upstream: Any, searcher: str) -> None:
    root = make_workspace(workdir)
    calls = [
        {"name": "read_file", "arguments": {"file_path": str(root / "src" / "app.py"), "offset": 4, "limit": 2}},
        {
            "name": "read_file",
            "arguments": {
                "file_path": str(root / "src" / "app.py"),
                "offset": 5,
                "limit": 40,
                "mode": "indentation",
                "indentation": {"anchor_line": 5, "max_levels": 1, "include_siblings": False, "include_header": True},
            },
        },
        {"name": "list_dir", "arguments": {"dir_path": str(root), "offset": 1, "limit": 25, "depth": 2}},
        {"name": "grep_files", "arguments": {"pattern": "needle", "include": "*.py", "path": str(root), "limit": 20}},
        {"name": "grep_files", "arguments": {"pattern": "needle"}},
        {"name": "view_image", "arguments": {"path": str(root / "shot.png")}},
    ]
    watch, _ = await run_turn(daemon, workdir, calls)
    sent = outputs_sent(mock_upstream)
    assert sent["call_0"] == "L4: def main():\nL5:     print('needle')"
    assert sent["call_1"] == "L4: def main():\nL5:     print('needle')\nL6:     return 0"
    assert sent["call_2"] == "\n".join(
        [f"Absolute path: {root}", "README.md", "shot.png", "src/", "  app.py", "  util.py"]
    )
    assert sent["call_3"] == str(root / "src" / "app.py")
    assert sorted(sent["call_4"].split("\n")) == [str(root / "README.md"), str(root / "src" / "app.py")]
    image_items = sent["call_5"]
    assert [item["type"] for item in image_items] == ["input_image"]
    assert image_items[0]["image_url"] == "data:image/png;base64," + base64.b64encode((root / "shot.png").read_bytes()).decode()
    completed = {e.data["call_id"]: e.data for e in watch.of_type("tool.completed")}
    assert all(completed[f"call_{i}"]["ok"] for i in range(6))
    assert {completed["call_3"]["searcher"], completed["call_4"]["searcher"]} == {searcher}
    assert completed["call_5"]["image"]["width"] == 20
    assert completed["call_5"]["output"] == "[image]"  # the data travels once, in the output item
    tools = {tool["name"]: tool for tool in mock_upstream.requests[-1].body["tools"]}
    assert {"read_file", "list_dir", "grep_files", "view_image"} <= set(tools)
    assert tools["grep_files"]["parameters"]["required"] == ["pattern"]


async def test_relative_paths_and_no_matches(daemon: Any, workdir: Path, mock_upstream: Any) -> None:
    make_workspace(workdir)
    calls = [
        {"name": "read_file", "arguments": {"file_path": "src/util.py"}},
        {"name": "list_dir", "arguments": {"dir_path": "src", "depth": 1}},
        {"name": "grep_files", "arguments": {"pattern": "absent-word", "path": "src"}},
        {"name": "view_image", "arguments": {"path": "shot.png"}},
    ]
    watch, _ = await run_turn(daemon, workdir, calls)
    sent = outputs_sent(mock_upstream)
    assert sent["call_0"] == "L1: def helper():\nL2:     return 'hay'"
    assert sent["call_1"] == f"Absolute path: {workdir / 'src'}\napp.py\nutil.py"
    assert sent["call_2"] == "No matches found."
    assert sent["call_3"][0]["type"] == "input_image"
    ok = {e.data["call_id"]: e.data["ok"] for e in watch.of_type("tool.completed")}
    assert ok == {"call_0": True, "call_1": True, "call_2": False, "call_3": True}


MALFORMED = [
    ("read_file", "{not json"),
    ("read_file", {}),
    ("read_file", {"file_path": 7}),
    ("read_file", {"file_path": "x", "offset": 0}),
    ("read_file", {"file_path": "x", "limit": -3}),
    ("read_file", {"file_path": "x", "mode": "tree"}),
    ("read_file", {"file_path": "x", "mode": "indentation", "indentation": {"anchor": 1}}),
    ("read_file", {"file_path": "missing.txt"}),
    ("list_dir", "[1, 2]"),
    ("list_dir", {"path": "."}),
    ("list_dir", {"dir_path": ".", "depth": 0}),
    ("list_dir", {"dir_path": ".", "limit": "ten"}),
    ("list_dir", {"dir_path": "missing"}),
    ("grep_files", ""),
    ("grep_files", {"pattern": ""}),
    ("grep_files", {"pattern": "a", "limit": 0}),
    ("grep_files", {"pattern": "(unclosed"}),
    ("grep_files", {"pattern": "a", "path": "missing"}),
    ("grep_files", {"pattern": "a", "include": ["*.py"]}),
    ("view_image", {"path": ["a.png"]}),
    ("view_image", {"path": "missing.png"}),
    ("view_image", {"path": "src/app.py"}),
    ("view_image", {"path": "a.png", "detail": "high"}),
]


async def test_malformed_arguments_become_error_outputs(daemon: Any, workdir: Path, mock_upstream: Any, searcher: str) -> None:
    make_workspace(workdir)
    calls = [{"name": name, "arguments": arguments} for name, arguments in MALFORMED]
    watch, tid = await run_turn(daemon, workdir, calls)
    sent = outputs_sent(mock_upstream)
    assert len(sent) == len(MALFORMED)
    for index, (name, arguments) in enumerate(MALFORMED):
        output = sent[f"call_{index}"]
        assert isinstance(output, str) and output.startswith("error: "), (name, arguments, output)
        assert "crashed" not in output, output
    completed = watch.of_type("tool.completed")
    assert len(completed) == len(MALFORMED) and not any(e.data["ok"] for e in completed)
    assert (await daemon.ops.get_thread(tid))["state"] == "idle"
    assert "unknown field(s): detail" in sent[f"call_{len(MALFORMED) - 1}"]
    assert json.dumps(sent)  # everything the model got is plain JSON
