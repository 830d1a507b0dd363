"""``echs send --file`` and ``--steps``, ``echs config chain=/steps=``: what the daemon
takes, given from the command line, checked before sending."""

from __future__ import annotations

import io
import json
from pathlib import Path

from PIL import Image

from tests.helpers import conversation
from tests.cli.helpers import echs, json_lines, new_thread
from tests.helpers import mock_directive


def _history(state: Path, tid: str) -> list[dict]:
    result = echs(state, "history", tid, "--json")
    assert result.returncode == 0, result.stderr
    return json_lines(result.stdout) if result.stdout.lstrip().startswith("{") else json.loads(result.stdout)


def test_files_go_with_the_message_as_text_and_image(state: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# plan\nsay hi to the team\n")
    picture = tmp_path / "shot.png"
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 10, 10)).save(buffer, "PNG")
    picture.write_bytes(buffer.getvalue())
    tid = new_thread(state)
    result = echs(state, "send", tid, "look at these", "--file", str(notes), "--file", str(picture), "--wait")
    assert result.returncode == 0, result.stderr
    user = next(item for item in conversation(_history(state, tid)) if item.get("role") == "user")
    content = user["content"]
    assert content[0] == {"type": "input_text", "text": "look at these"}
    assert content[1]["text"] == '<file name="notes.md">\n# plan\nsay hi to the team\n\n</file>'
    assert content[2]["type"] == "input_image" and content[2]["image_url"].startswith("data:image/png;base64,")


def test_bad_files_are_usage_errors_naming_the_file(state: Path, tmp_path: Path) -> None:
    tid = new_thread(state)
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\x00\x01\xfe\xff" * 10)
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n" + b"not really")
    for path, says in ((tmp_path / "missing.txt", "No such file"), (binary, "neither an image nor UTF-8 text"), (broken, "broken.png")):
        result = echs(state, "send", tid, "hi", "--file", str(path))
        assert result.returncode == 2 and says in result.stderr and "--file" in result.stderr, result.stderr
    result = echs(state, "show", tid, "--json")
    assert json.loads(result.stdout)["last_seq"] <= 1  # nothing was sent


def test_steps_wait_for_the_whole_run(state: Path) -> None:
    tid = new_thread(state)
    # The built-in mock echoes each continuation, which names the finish marker in its
    # middle: that is no finish, so the run uses all its steps.
    result = echs(state, "send", tid, "work on it", "--steps", "3", "--wait", "--json")
    assert result.returncode == 0, result.stderr
    events = json_lines(result.stdout)
    assert events[-1]["event"] == "run.finished"
    assert events[-1]["data"]["turns"] == 3 and events[-1]["data"]["reason"] == "steps"
    assert [e["event"] for e in events].count("turn.completed") == 3
    human = echs(state, "send", tid, "again", "--steps", "2", "--wait")
    assert human.returncode == 0, human.stderr
    assert "mock reply to: again" in human.stdout and "autonomous turn 2 of 2" in human.stdout
    assert "autonomous run finished after 2 turns (its --steps were used up)" in human.stderr


def test_a_trailing_finish_marker_ends_the_run_and_is_never_shown(state: Path) -> None:
    tid = new_thread(state)
    finished = mock_directive({"text": "all of it is finished\n\n%%DONE%%\n", "deltas": 9})
    human = echs(state, "send", tid, finished, "--steps", "5", "--wait")
    assert human.returncode == 0, human.stderr
    assert human.stdout == "all of it is finished\n"  # streamed in 9 deltas, the marker held back and cut
    assert "autonomous run finished after 1 turn (the model said it was done)" in human.stderr
    result = echs(state, "send", tid, finished, "--steps", "5", "--wait", "--json")
    events = json_lines(result.stdout)
    completed = [e["data"] for e in events if e["event"] == "turn.completed"]
    assert [c["final_text"] for c in completed] == ["all of it is finished"] and completed[0]["done"] is True
    assert events[-1]["data"]["reason"] == "done"
    blocks = echs(state, "history", tid).stdout.split("assistant ›\n")[1:]  # (the user's messages name it)
    assert [block.split("user ›")[0] for block in blocks] == ["  all of it is finished\n"] * 2


def test_steps_is_checked_and_cannot_steer(state: Path) -> None:
    tid = new_thread(state)
    for args in (("--steps", "0"), ("--steps", "101"), ("--steps", "two"), ("--steps", "3", "--steer")):
        result = echs(state, "send", tid, "x", *args)
        assert result.returncode == 2, (args, result.stderr)


def test_config_takes_chain_and_steps(state: Path) -> None:
    tid = new_thread(state)
    result = echs(state, "config", tid, "chain=true", "steps=2", "--json")
    assert result.returncode == 0, result.stderr
    config = json.loads(result.stdout)["config"]
    assert config["chain"] is True and config["steps"] == 2
    waited = echs(state, "send", tid, "a run by config", "--wait", "--json")  # the thread's steps make it a run
    assert waited.returncode == 0 and json_lines(waited.stdout)[-1]["event"] == "run.finished", waited.stderr
    assert echs(state, "config", tid, "chain=false", "--json").returncode == 0
    for bad in ("chain=yes", "steps=0", "steps=x"):
        result = echs(state, "config", tid, bad)
        assert result.returncode == 2 and bad.split("=")[0] in result.stderr, result.stderr
