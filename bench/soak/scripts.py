"""The user messages the soak sends: each scripts the mock model with a ``mock:`` line
(docs/mock-upstream.md), so a turn calls the tools a real model would. Pure functions.

Every command a script runs carries ``marker`` as its process name (``exec -a``), so the
soak can find the processes a turn started in ``/proc`` and see that none outlives an
interrupt, a kill or the daemon.
"""

from __future__ import annotations

import json
from typing import Any

SLEEP_S = 600  # a tool that runs until it is stopped
YIELD_MS = 30_000  # exec_command waits this long (its maximum) before it answers with a session


def _message(note: str, steps: list[dict[str, Any]]) -> str:
    return f"{note}\nmock: {json.dumps(steps)}"


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def _patch(name: str, lines: list[str]) -> str:
    body = "".join(f"+{line}\n" for line in lines)
    return f"*** Begin Patch\n*** Add File: {name}\n{body}*** End Patch\n"


def tools_turn(n: int, cwd: str) -> str:
    """exec_command and apply_patch (freeform, in parallel), then read_file, then an answer."""
    name = f"notes_{n}.txt"
    first = [
        _call("exec_command", {"cmd": f"echo turn {n}; ls | wc -l"}),
        {"name": "apply_patch", "input": _patch(name, [f"note {n}", "second line"])},
    ]
    return _message(
        f"tools {n}", [{"calls": first}, {"calls": [_call("read_file", {"file_path": f"{cwd}/{name}"})]}, {"text": f"wrote {name}"}]
    )


def stream_turn(n: int, big: bool) -> str:
    """A reply streamed like a model's (50 words, 20 ms apart), or 3,000 deltas at full speed."""
    if big:
        return _message(f"stream {n}", [{"repeat": {"chunk": "y", "count": 3000}}])
    words = " ".join(f"w{n}.{i}" for i in range(50))
    return _message(f"stream {n}", [{"text": words, "deltas": 50, "delay_ms": 20}])


def slow_turn(n: int) -> str:
    """About 4 s of streaming: time to queue, steer and interrupt into."""
    words = " ".join(f"s{n}.{i}" for i in range(200))
    return _message(f"slow {n}", [{"text": words, "deltas": 200, "delay_ms": 20}])


def sleeping_tool(n: int, marker: str, escape: bool) -> str:
    """A command that runs until stopped; with ``escape`` it also leaves its process group
    (``setsid``), which containment must still catch."""
    cmd = f"echo started {n}; exec -a {marker} sleep {SLEEP_S}"
    if escape:
        cmd = f"(setsid bash -c 'exec -a {marker}-escaped sleep {SLEEP_S}' &); {cmd}"
    return _message(f"sleep {n}", [{"calls": [_call("exec_command", {"cmd": cmd, "yield_time_ms": YIELD_MS})]}, {"text": "slept"}])


def child_task(n: int, k: int) -> str:
    """A sub-agent's first message: its own script (a command, then an answer)."""
    return _message(f"child {n}.{k}", [{"calls": [_call("exec_command", {"cmd": f"echo child {n}.{k}"})]}, {"text": f"child {n}.{k} done"}])


def agents_turn(n: int, children: int) -> str:
    """Spawn ``children`` sub-agents, wait for them all, answer."""
    spawns = [_call("spawn_agent", {"message": child_task(n, k)}) for k in range(children)]
    return _message(f"agents {n}", [{"calls": spawns}, {"calls": [_call("wait_agents", {"timeout_ms": 120_000})]}, {"text": "agents done"}])
