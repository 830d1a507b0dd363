"""An input larger than the model's window, as a new user meets it: `echs send --file` is
refused at once (exit 1, the limit named) and nothing is stored; a thread that already holds
more than its (new, smaller) model's window recovers on the next send, and `echs compact`
works on it. A real daemon, a real mock endpoint, the real CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest

from tests.cli.helpers import Serve, echs, mock_upstream_process, new_thread
from tests.helpers import conversation

SMALL, BIG = 24_000, 400_000  # the two models' windows, in tokens
SCRIPT = {"models": [{"id": "gpt-6.9-small", "context_window": SMALL}, {"id": "gpt-6.9-big", "context_window": BIG}]}
CONFIG = f"""
[models."gpt-6.9-small"]
context_window = {SMALL}
[models."gpt-6.9-big"]
context_window = {BIG}
"""


@pytest.fixture
def endpoint(tmp_path: Path) -> Iterator[str]:
    """``echsd mock-upstream`` with the two models (it refuses what passes their windows)."""
    with mock_upstream_process(tmp_path, SCRIPT) as mock:
        yield mock.url


@pytest.fixture
def daemon(tmp_path: Path, endpoint: str) -> Iterator[Path]:
    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text(CONFIG)
    serve = Serve(state, "--provider", "openai", "--base-url", endpoint)
    try:
        yield state
    finally:
        serve.terminate()


def history(state: Path, tid: str) -> list[dict]:
    result = echs(state, "history", tid, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_an_input_past_the_window_is_refused_at_send_and_never_stored(daemon: Path, tmp_path: Path) -> None:
    tid = new_thread(daemon, "--model", "gpt-6.9-small")
    big = tmp_path / "big.txt"
    big.write_text("all work and no play. " * 6_000)  # 132 kB: about 33,000 tokens
    refused = echs(daemon, "send", tid, "summarise this", "--file", str(big), "--wait")
    assert refused.returncode == 1 and refused.stdout == ""
    assert "input too large for model gpt-6.9-small" in refused.stderr and f"context window holds {SMALL:,}" in refused.stderr
    assert history(daemon, tid) == []  # nothing stored, no turn
    fine = echs(daemon, "send", tid, "hello", "--wait")
    assert fine.returncode == 0 and fine.stdout == "mock reply to: hello\n"


def test_a_thread_holding_more_than_its_window_recovers_and_compacts(daemon: Path, tmp_path: Path) -> None:
    tid = new_thread(daemon, "--model", "gpt-6.9-big")
    big = tmp_path / "big.txt"
    big.write_text("all work and no play. " * 6_000)
    assert echs(daemon, "send", tid, "keep this", "--file", str(big), "--wait").returncode == 0  # fits the big window
    switched = echs(daemon, "config", tid, "model=gpt-6.9-small")
    assert switched.returncode == 0, switched.stderr
    after = echs(daemon, "send", tid, "and now?", "--wait")  # the history is past the small window: cut, then on
    assert after.returncode == 0 and after.stdout == "mock reply to: and now?\n", after.stderr
    kept = conversation(history(daemon, tid))
    first = "".join(part["text"] for part in kept[0]["content"])
    assert "characters cut from the middle here" in first and first.startswith("keep this")
    assert len(json.dumps(kept)) // 4 < SMALL
    compacted = echs(daemon, "compact", tid)
    assert compacted.returncode == 0, compacted.stderr
    again = echs(daemon, "send", tid, "still there?", "--wait")
    assert again.returncode == 0 and again.stdout == "mock reply to: still there?\n"
