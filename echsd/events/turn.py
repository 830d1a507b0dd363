"""Event types of a running turn: its start and end, streamed text, items, tools, usage."""

from __future__ import annotations

from typing import Any

from echsd.events.base import EventData, doc, event


@event("turn.started")
class TurnStarted(EventData):
    """A turn started."""

    turn_id: str = doc("str")
    input_ids: list[Any] = doc("inputs that started it")
    turn: int = doc("its number in the thread: 1, 2, ... (an undo frees the numbers of the turns it took back)")


@event("turn.diff")
class TurnDiff(EventData):
    """What the turn changed in the thread's cwd (a git repository's work tree), logged
    before its terminal event; none when it changed nothing. Measured from snapshots taken
    at the turn's start and end (commits on `refs/echsd/<thread>/<turn>/start|end`; the
    user's branch, index and stash untouched)."""

    turn_id: str = doc("str")
    turn: int = doc("its number")
    paths: list[Any] = doc("changed paths, relative to the cwd")
    diff: str = doc("the unified diff (`git diff`), cut at `[tuning] turn_diff_bytes` with a marker line")
    truncated: bool = doc("bool: the diff was cut")
    stat: Any = doc("{files, insertions, deletions}")
    branch: Any = doc("optional: a worktree thread's branch, where the turn's changes were committed")
    commit: Any = doc("optional: that commit (null: nothing to commit)")
    commit_error: Any = doc("optional: why the changes could not be committed (a hook refused, say)")


@event("turn.delta", streamed=True)
class TurnDelta(EventData):
    """Assistant text streamed from the model. One event may carry several of the model's
    deltas joined (those that arrived together); never text of two items."""

    turn_id: str = doc("str")
    item_id: str = doc("str")
    delta: str = doc("text")


@event("turn.reasoning_delta", streamed=True)
class TurnReasoningDelta(EventData):
    """Reasoning summary text streamed from the model; like ``turn.delta``, one event may
    carry several of the model's deltas joined."""

    turn_id: str = doc("str")
    item_id: str = doc("str")
    delta: str = doc("text")


@event("item.completed")
class ItemCompleted(EventData):
    """An item was appended to the history."""

    turn_id: str | None = doc("str or null")
    item: Any = doc("the Responses item exactly as stored")


@event("tool.started")
class ToolStarted(EventData):
    """A tool call began running."""

    turn_id: str = doc("str")
    call_id: str = doc("str")
    name: str = doc("str")
    arguments: Any = doc("parsed or raw")


@event("tool.output", streamed=True)
class ToolOutput(EventData):
    """Progress output of a running tool: at most `[tuning] turn_output_bytes` per turn
    (then one notice chunk); binary control characters (NUL, ...) arrive as U+FFFD."""

    turn_id: str = doc("str")
    call_id: str = doc("str")
    stream: Any = doc("stdout | stderr")
    chunk: str = doc("text")


@event("tool.completed")
class ToolCompleted(EventData):
    """A tool call finished; its output item follows as item.completed."""

    turn_id: str = doc("str")
    call_id: str = doc("str")
    name: str = doc("str")
    ok: bool = doc("bool")
    output: str = doc("text given to the model")
    duration_ms: float = doc("float")
    sandbox_denied: Any = doc(
        "when the sandbox stopped the call: `command` (it failed with a permission or network error while confined), "
        "`patch` (a change outside the writable roots, refused) or `unenforceable` (a sandbox this machine cannot enforce); "
        "absent otherwise"
    )


@event("turn.usage")
class TurnUsage(EventData):
    """Token usage of the turn."""

    turn_id: str = doc("str")
    input_tokens: int = doc("int")
    cached_tokens: int = doc("int")
    output_tokens: int = doc("int")
    reasoning_tokens: int = doc("int")
    cost_usd: float = doc("float, estimated from the model catalog's prices (0 where unknown)")


@event("turn.retry")
class TurnRetry(EventData):
    """The model request failed and is retried after a delay (clients show it instead of
    silence)."""

    turn_id: str = doc("str")
    attempt: int = doc("int, from 1")
    max_retries: int = doc("int")
    delay_s: float = doc("float")
    reason: Any = doc("one line")
    code: Any = doc("error code")


@event("account.rate_limits")
class AccountRateLimits(EventData):
    """The endpoint reported the account's rate limits (ChatGPT plans: windows and credits)."""

    turn_id: str = doc("str")
    limits: list[Any] = doc("list of {limit_id, primary, secondary, credits, ...}")


@event("plan.updated")
class PlanUpdated(EventData):
    """The model updated the thread's task plan (update_plan)."""

    turn_id: str | None = doc("str or null")
    explanation: str | None = doc("str or null")
    steps: list[Any] = doc("list of {step, status: pending | in_progress | completed}")


@event("tool.call", stored=False)
class RemoteToolCall(EventData):
    """A call of a remote tool, sent to the connection that registered it (`tool.register`)."""

    call_id: str = doc("str")
    turn_id: str = doc("str")
    name: str = doc("str")
    arguments: Any = doc("object")


@event("turn.waiting")
class TurnWaiting(EventData):
    """The turn waits for a free slot before it runs (too many sub-agent turns at once)."""

    turn_id: str = doc("str")
    reason: str = doc("text")


@event("turn.completed")
class TurnCompleted(EventData):
    """The turn ended normally."""

    turn_id: str = doc("str")
    final_text: Any = doc("last assistant text (a trailing finish marker %%DONE%% cut)")
    done: Any = doc("true when the reply ended an autonomous run")


@event("turn.interrupted")
class TurnInterrupted(EventData):
    """The turn ended by interrupt, pause, kill or daemon restart."""

    turn_id: str = doc("str")
    reason: int = doc("interrupt | pause | kill | shutdown | restart")


@event("turn.error")
class TurnError(EventData):
    """The turn ended in error (or the worker crashed)."""

    turn_id: str | None = doc("str or null")
    error: Any = doc("{code, message}")


@event("exec.session_started")
class ExecSessionStarted(EventData):
    """An `exec_command` call returned with its command still running: an exec session, which
    `write_stdin` polls or types into, until `exec.session_ended`."""

    session_id: int = doc("int, what write_stdin names it by")
    turn_id: str = doc("str, the turn whose call started it")
    command: str = doc("str, as the model wrote it")


@event("exec.session_ended")
class ExecSessionEnded(EventData):
    """An exec session is over: its command exited (and said so), or it was killed (its turn
    interrupted, the thread paused or killed, room made for another, the worker stopped), or
    the daemon restarted under it."""

    session_id: int = doc("int")
    reason: str = doc("text")
    exit_code: int | None = doc("int, or null when it was killed")
