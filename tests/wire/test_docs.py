"""docs/protocol.md is generated from the op table and the event catalogue; it must not drift."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from echsd.events import EVENT_TYPES
from echsd.wire.docs import render
from echsd.wire.schema import OPS

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def test_committed_protocol_doc_matches_the_generator() -> None:
    generated = subprocess.run([sys.executable, "-m", "echsd.wire.docs"], capture_output=True, text=True, check=True).stdout
    assert generated == render()
    assert DOC.read_text() == generated, "docs/protocol.md is stale: run `python -m echsd.wire.docs > docs/protocol.md`"


def test_every_op_and_event_type_is_documented() -> None:
    text = render()
    for spec in OPS:
        assert f"### `{spec.op_name}`" in text
    for name in EVENT_TYPES:
        assert f"| `{name}` |" in text
