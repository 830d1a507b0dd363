"""What ``echs attach`` shows for each event, sans-IO: events in, display lines out.

Streamed text (assistant deltas, reasoning, tool output) is cut into lines: a line goes
out once it is complete or as wide as the terminal, so output printed above the input
line never has to be redrawn. Anything else first flushes the partial lines. A message
whose deltas were not seen (replayed after the log folded them) is shown whole from its
``item.completed``.
"""

from __future__ import annotations

from typing import Any, Callable

from echsd.cli.render import Style, approval_text, clip_lines, duration, one_line, printable, tokens
from echsd.cli.render_events import deleted_text, killed_text, summary, waiting_text
from echsd.cli.render_history import arguments_summary, content_text
from echsd.done_marker import MarkerHold, split_done


class LineCutter:
    """Streamed text to display lines: ``first`` prefixes the first line, ``rest`` the others."""

    def __init__(self, width: int, first: tuple[str, str], rest: tuple[str, str], paint: Callable[[str], str]) -> None:
        self.width = max(20, width)
        self.first = first  # (plain, styled): the plain text measures the width
        self.rest = rest
        self.paint = paint
        self.pending = ""
        self.started = False

    def add(self, text: str) -> list[str]:
        self.pending += printable(text)
        lines: list[str] = []
        while True:
            room = self.width - len((self.rest if self.started else self.first)[0])
            newline = self.pending.find("\n")
            if 0 <= newline <= room:
                line, self.pending = self.pending[:newline], self.pending[newline + 1 :]
            elif len(self.pending) > room:
                cut = self.pending.rfind(" ", 0, room + 1)
                cut = room if cut <= 0 else cut
                line, self.pending = self.pending[:cut], self.pending[cut:].lstrip(" ")
            else:
                return lines
            lines.append(self._line(line))

    def flush(self) -> list[str]:
        if not self.pending:
            return []
        line, self.pending = self.pending, ""
        return [self._line(line)]

    def _line(self, text: str) -> str:
        prefix = self.rest if self.started else self.first
        self.started = True
        return prefix[1] + self.paint(text)


class AttachView:
    def __init__(self, style: Style, width: int = 100) -> None:
        self.style = style
        self.width = width
        self.state: str | None = None
        self._text: LineCutter | None = None  # the assistant message being streamed
        self._marker = MarkerHold()  # ... holding back what may be its finish marker
        self._reasoning: LineCutter | None = None
        self._tools: dict[str, LineCutter] = {}  # call_id -> its streamed output
        self._streamed_tools: set[str] = set()
        self._next_user_steered = False
        self._usage: dict[str, Any] = {}
        self._approvals: dict[str, dict[str, Any]] = {}  # request_id -> approval.requested data, oldest first

    # -- helpers ---------------------------------------------------------------------------

    def _label(self, text: str, **styles: Any) -> tuple[str, str]:
        return text, self.style(text, **styles)

    def _cutter(self, label: tuple[str, str], paint: Callable[[str], str] = str, indent: str = "  ") -> LineCutter:
        return LineCutter(self.width, label, (indent, indent), paint)

    def _flush_text(self) -> list[str]:
        lines = []
        if self._text is not None:
            lines.extend(self._text.add(self._marker.end()))
        for cutter in (self._reasoning, self._text):
            if cutter is not None:
                lines.extend(cutter.flush())
        self._reasoning = self._text = None
        return lines

    def waiting(self, request: dict[str, Any]) -> None:
        """A request waiting for an answer (from its event, or listed when attaching)."""
        self._approvals[str(request.get("request_id"))] = request

    @staticmethod
    def _choices(request: dict[str, Any]) -> str:
        rule = request.get("rule")
        return f"  (y/n, or a: always allow {' '.join(rule)} in this thread)" if rule else "  (y/n)"

    def pending_approval(self) -> dict[str, Any] | None:
        """The oldest tool call still waiting for a yes or no, if any."""
        return next(iter(self._approvals.values()), None)

    def partial(self) -> str:
        """The streamed line not complete yet (shown live in the status line), with its label."""
        for cutter in (self._reasoning, self._text, *self._tools.values()):
            if cutter is not None and cutter.pending:
                return f"{cutter.first[0].strip()} {cutter.pending}"
        return ""

    def flush(self) -> list[str]:
        """Every partial line (e.g. before detaching)."""
        lines = self._flush_text()
        for cutter in self._tools.values():
            lines.extend(cutter.flush())
        return lines

    # -- events ----------------------------------------------------------------------------

    def feed(self, event: dict[str, Any]) -> list[str]:
        kind = str(event.get("event"))
        data = event.get("data") or {}
        if kind == "turn.delta":
            return self._delta(data, reasoning=False)
        if kind == "turn.reasoning_delta":
            return self._delta(data, reasoning=True)
        if kind == "tool.output":
            return self._tool_output(data)
        if kind == "item.completed":
            return self._item(data.get("item") or {})
        if kind == "turn.usage":
            self._usage = data
            return []
        if kind == "input.delivered":
            self._next_user_steered = data.get("mode") == "steer"
            return []
        if kind in ("turn.started", "thread.created"):
            return []
        return self._flush_text() + self._other(kind, data, event)

    def _delta(self, data: dict[str, Any], *, reasoning: bool) -> list[str]:
        text = str(data.get("delta", ""))
        if reasoning:
            lines = []
            if self._text is not None:
                lines = self._text.flush()
                self._text = None
            if self._reasoning is None:
                self._reasoning = self._cutter(self._label("thinking › ", dim=True), self.style.dim)
            return lines + self._reasoning.add(text)
        lines = []
        if self._reasoning is not None:
            lines = self._reasoning.flush()
            self._reasoning = None
        if self._text is None:
            self._text = self._cutter(self._label("assistant › ", fg="green", bold=True))
            self._marker = MarkerHold()
        return lines + self._text.add(self._marker.feed(text))

    def _tool_output(self, data: dict[str, Any]) -> list[str]:
        call_id = str(data.get("call_id"))
        cutter = self._tools.get(call_id)
        if cutter is None:
            bar = ("  │ ", self.style.dim("  │ "))
            cutter = self._tools[call_id] = LineCutter(self.width, bar, bar, str)
        self._streamed_tools.add(call_id)
        return self._flush_text() + cutter.add(str(data.get("chunk", "")))

    def _item(self, item: dict[str, Any]) -> list[str]:
        kind, role = item.get("type"), item.get("role")
        if kind == "message" and role == "assistant":
            if self._text is not None:
                return self._flush_text()  # its deltas were shown
            return self._whole(self._label("assistant › ", fg="green", bold=True), split_done(content_text(item))[0])
        if kind == "reasoning":
            if self._reasoning is not None:
                lines = self._reasoning.flush()
                self._reasoning = None
                return lines
            text = content_text(item)
            return self._whole(self._label("thinking › ", dim=True), text, self.style.dim) if text else []
        if kind == "message" and role == "user":
            steered, self._next_user_steered = self._next_user_steered, False
            label = self._label("you (steer) › " if steered else "you › ", fg="cyan", bold=True)
            return self._flush_text() + self._whole(label, content_text(item))
        return []  # function calls and outputs: shown by the tool.* events

    def _whole(self, label: tuple[str, str], text: str, paint: Callable[[str], str] = str) -> list[str]:
        lines = self._flush_text()
        cutter = self._cutter(label, paint)
        return lines + cutter.add(text) + cutter.flush()

    def _other(self, kind: str, data: dict[str, Any], event: dict[str, Any]) -> list[str]:
        s = self.style
        if kind == "tool.started":
            arguments = arguments_summary(data.get("arguments"), self.width - 20)
            return [s(f"⚙ {data.get('name')}", fg="yellow", bold=True) + s.dim(f"({arguments})")]
        if kind == "tool.completed":
            return self._tool_done(data)
        if kind == "approval.requested":
            self.waiting(data)
            return [s(f"⚠ approve {data.get('tool')}: ", fg="yellow", bold=True) + approval_text(data, self.width - 30) + s.dim(self._choices(data))]
        if kind == "approval.resolved":
            request = self._approvals.pop(str(data.get("request_id")), None) or {}
            decision = str(data.get("decision"))
            words = {"approve": ("approved", "green"), "deny": ("denied", "red"), "timeout": ("denied: nobody answered in time", "red")}
            text, colour = words.get(decision, (decision, "yellow"))
            if data.get("always") and request.get("rule"):
                text = f"approved for this thread ({' '.join(request['rule'])} runs without asking)"
            return [s(f"  {text}: {request.get('tool', 'call')}", fg=colour)]
        if kind in ("turn.completed", "turn.interrupted", "turn.error"):
            ended = data.get("turn_id")  # requests of an ended turn are over (e.g. after a restart)
            self._approvals = {k: v for k, v in self._approvals.items() if v.get("turn_id") != ended}
        if kind == "turn.completed":
            usage = self._usage
            self._usage = {}
            spent = f" · {tokens(usage.get('input_tokens'))} in / {tokens(usage.get('output_tokens'))} out" if usage else ""
            return [s("✓ turn completed", fg="green") + s.dim(spent)]
        if kind == "turn.interrupted":
            return [s(f"⏹ turn interrupted ({data.get('reason', 'interrupt')})", fg="yellow")]
        if kind == "turn.error":
            error = data.get("error") or {}
            return [s(f"✗ turn failed: {error.get('code')}: {one_line(str(error.get('message', '')), self.width)}", fg="red")]
        if kind == "thread.state":
            previous, self.state = self.state, str(data.get("state"))
            if self.state in ("paused", "killed") or previous == "paused":
                return [s(f"── {self.state} ──", fg="yellow" if self.state != "killed" else "red")]
            return []
        if kind == "input.queued":
            return [s.dim(f"⋯ queued {data.get('input_id')} (position {data.get('position')})")]
        if kind == "input.dropped":
            return [s(f"input {data.get('input_id')} dropped: {data.get('reason')}", fg="yellow")]
        if kind == "thread.killed":
            return [s(killed_text(data), fg="red")]
        if kind == "thread.deleted":
            self.state = "deleted"
            return [s(f"── {deleted_text(str(event.get('thread_id')), data)} ──", fg="red")]
        if kind in ("turn.retry", "turn.waiting"):
            return [s(("↻ " if kind == "turn.retry" else "⋯ ") + one_line(waiting_text(kind, data), self.width - 2), fg="yellow")]
        if kind == "thread.configured":
            config = data.get("config") or {}
            changed = ", ".join(f"{k}={one_line(str(config.get(k)), 40)}" for k in data.get("changed") or [])
            return [s.dim(f"config changed: {changed or 'nothing'}")]
        if kind == "thread.compacted":
            return [s.dim(f"context compacted: {data.get('items_before')} → {data.get('items_after')} items")]
        if kind == "events.gap":
            return [s.dim(f"… events {data.get('from_seq')}..{data.get('to_seq')} not shown ({data.get('reason')})")]
        if kind == "subagent.spawned":
            return [s(f"↳ spawned {data.get('agent_id')} ({data.get('agent_type')})", fg="magenta")]
        if kind == "subagent.completed":
            final = one_line(str(data.get("final_message", "")), self.width - 40)
            return [s(f"↳ {data.get('agent_id')} {data.get('status')}: ", fg="magenta") + final]
        return [s.dim(f"{kind}: {one_line(summary(event), self.width - len(kind) - 2)}")]

    def _tool_done(self, data: dict[str, Any]) -> list[str]:
        s = self.style
        call_id = str(data.get("call_id"))
        lines: list[str] = []
        cutter = self._tools.pop(call_id, None)
        if cutter is not None:
            lines.extend(cutter.flush())
        if call_id not in self._streamed_tools and data.get("output"):
            lines.extend(s.dim("  │ ") + line for line in clip_lines(str(data["output"]), max_lines=6, max_chars=600))
        self._streamed_tools.discard(call_id)
        took = duration(float(data.get("duration_ms") or 0) / 1000)
        mark = s(f"  ✓ {data.get('name')}", fg="green") if data.get("ok") else s(f"  ✗ {data.get('name')}", fg="red")
        return [*lines, mark + s.dim(f" · {took}")]
