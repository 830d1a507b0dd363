"""``[tuning]``: knobs read only from config.toml, each with the range it must stay in.

Every knob has a range outside which some part of the daemon stops working (a zero idle
timeout fails every turn, a 10-byte frame limit refuses every request); a switch is true or
false. Adding a knob is one line in ``Tuning``; a number added without ``_knob`` accepts any
non-negative value of its type.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from echsd.settings.errors import SettingsError

DAY_S = 86_400.0
MIB = 1024 * 1024


def _knob(default: Any, low: float, high: float, *, off: bool = False) -> Any:
    """A ``[tuning]`` field with its accepted range (``off``: 0 is also accepted, meaning off)."""
    return field(default=default, metadata={"range": (low, high), "off": off})


@dataclass(frozen=True)
class Tuning:
    """Knobs read only from config.toml's ``[tuning]`` table (no flag or env)."""

    max_children: int = _knob(16, 0, 1000)  # live children per thread
    max_depth: int = _knob(4, 0, 100)  # sub-agent nesting
    max_running_subagents: int = _knob(50, 1, 10_000)  # sub-agent turns running at once, daemon-wide (more wait their turn)
    join_deltas: bool = True  # a model's deltas of one item that arrive together are one event (false: one event each)
    retained_deltas: int = _knob(20_000, 10, 10**9)  # stored delta events per thread before folding
    retained_delta_bytes: int = _knob(64 * MIB, 1 * MIB, 1024**4)  # ... and their size
    turn_output_bytes: int = _knob(8 * MIB, 64 * 1024, 1024**3)  # tool output streamed as events per turn
    restart_limit: int = _knob(5, 0, 1000)  # actor restarts allowed per restart_window_s
    restart_window_s: float = _knob(60.0, 1.0, DAY_S)
    restart_cooldown_s: float = _knob(30.0, 0.0, DAY_S)  # a given-up worker is tried again after this
    stream_idle_timeout_s: float = _knob(300.0, 1.0, DAY_S)
    max_retries: int = _knob(5, 0, 100)
    tool_timeout_s: float = _knob(600.0, 1.0, 7 * DAY_S)
    tool_argument_bytes: int = _knob(4 * MIB, 64 * 1024, 256 * MIB)  # one call's arguments; past it the call is refused
    approval_timeout_s: float = _knob(600.0, 0.1, 7 * DAY_S)  # an unanswered approval request is denied after this
    max_message_bytes: int = _knob(16 * MIB, 64 * 1024, 256 * MIB)  # wire frame limit, both ways (the client takes 256 MiB)
    client_queue_events: int = _knob(10_000, 100, 10**7)  # per-connection backlog before events.gap
    client_queue_bytes: int = _knob(32 * MIB, 1 * MIB, 1024 * MIB)  # ... and its size
    app_server_requests: int = _knob(64, 1, 10_000)  # an app-server connection's requests answered at once (more wait to be read)
    heartbeat_s: float = _knob(15.0, 0.05, 3600.0, off=True)
    hello_timeout_s: float = _knob(10.0, 0.1, 300.0)  # connect to a good hello, or the connection is closed
    blackboard_max_value_bytes: int = _knob(1 * MIB, 1024, 64 * MIB)  # one blackboard value, as JSON text
    blackboard_log_keep: int = _knob(10_000, 1, 10**9)  # blackboard changes kept for replay (subscribe {blackboard, since})
    lease_s: float = _knob(10.0, 0.5, 600.0)  # PostgreSQL store: a node silent this long loses its threads to another
    model_list: bool = True  # fetch the endpoint's model list at start and for models the catalog has not seen
    model_list_interval_s: float = _knob(60.0, 0.01, DAY_S)  # at least this long between two fetches
    project_docs: bool = True  # send the AGENTS.md files of a thread's repository (a thread's project_docs may turn it off)
    project_doc_max_bytes: int = _knob(32 * 1024, 1024, 4 * MIB)  # of AGENTS.md text sent, all files together
    web_login_code_s: float = _knob(120.0, 1.0, 3600.0)  # an `echs web` login code works once, within this
    web_session_s: float = _knob(12 * 3600.0, 60.0, 30 * DAY_S)  # a web view session lasts at most this
    web_idle_s: float = _knob(2 * 3600.0, 60.0, 30 * DAY_S)  # ... and ends after this long unused
    turn_snapshots: bool = True  # snapshot a git cwd at each turn's start and end (turn.diff, undo)
    turn_diff_bytes: int = _knob(256 * 1024, 4096, 64 * MIB)  # of a turn.diff's unified diff; more is cut, with a marker


def tuning_from(table: Any, path: Path) -> Tuning:
    """The ``[tuning]`` table of ``path`` (None: absent) as validated ``Tuning``."""
    if table is None:
        return Tuning()
    if not isinstance(table, dict):
        raise SettingsError(f"invalid setting 'tuning' in {path}: expected a table (got {table!r})")
    knobs = {knob.name: knob for knob in fields(Tuning)}
    values: dict[str, Any] = {}
    for key, value in table.items():
        knob = knobs.get(key)
        if knob is None:
            raise SettingsError(f"unknown setting 'tuning.{key}' in {path}; known: {', '.join(knobs)}")
        values[key] = _tuning_value(f"'tuning.{key}' in {path}", knob.type, knob.metadata, value)
    return Tuning(**values)


def _tuning_value(where: str, type_name: Any, metadata: Mapping[str, Any], value: Any) -> Any:
    """A ``[tuning]`` value of the knob's type and within its range, or ``SettingsError``."""
    if type_name in (bool, "bool"):  # a switch
        if not isinstance(value, bool):
            raise SettingsError(f"invalid setting {where}: expected true or false (got {value!r})")
        return value
    is_float = type_name in (float, "float")
    kind = "a number" if is_float else "an integer"
    low, high = metadata.get("range", (0, None))
    span = f" from {_number(low)} to {_number(high)}" if high is not None else " >= 0"
    expected = f"{'0 (off) or ' if metadata.get('off') else ''}{kind}{span}"
    number = isinstance(value, int) or (is_float and isinstance(value, float))
    if isinstance(value, bool) or not number:
        raise SettingsError(f"invalid setting {where}: expected {expected} (got {value!r})")
    in_range = low <= value and (high is None or value <= high)
    if not in_range and not (metadata.get("off") and value == 0):
        raise SettingsError(f"invalid setting {where}: expected {expected} (got {value!r})")
    return float(value) if is_float else value


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"
