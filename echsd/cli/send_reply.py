"""What ``echs send --wait`` shows (without ``--json``).

stdout carries the reply text as it streams: exactly the model's text when stdout is a
pipe or a file, and on a terminal with its control sequences neutralised (``printable``:
no clipboard writes, retitling, bells or cursor games). The finish marker of autonomous
runs is never shown (``MarkerHold``). stderr says what happens around it: a turn ahead or a
pause it waits behind, a retried model request, which approval the turn waits for and how
to answer it, and how the turn ended. On a terminal, stderr also shows the tool calls with
their output as it comes and a status line (spinner, elapsed time, the line being
streamed) redrawn while the turn runs, as ``echs attach`` does.
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import Any, TextIO

import click

from echsd.cli.attach_status import TurnStatus
from echsd.cli.attach_view import AttachView
from echsd.wire.turnwatch import TurnWatch
from echsd.cli.render import Style, approval_text, printable, terminal_safe
from echsd.cli.render_events import waiting_text
from echsd.cli.render_history import content_text
from echsd.done_marker import MarkerHold, split_done

RUN_ENDS = {
    "done": "the model said it was done",
    "steps": "its --steps were used up",
    "interrupt": "interrupted",
    "pause": "the thread was paused",
    "kill": "the thread was killed",
    "shutdown": "the daemon stopped",
    "error": "a turn failed",
    "restart": "the daemon restarted",
}
TOOL_EVENTS = ("tool.started", "tool.output", "tool.completed")
CLEAR_LINE = "\r\x1b[K"
DECISIONS = {"approve": "approved", "deny": "denied", "timeout": "denied: nobody answered in time", "cancelled": "cancelled"}


class ReplyPrinter:
    def __init__(self, color: bool, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.terminal = self.out.isatty()  # there, model text is made printable first
        self.live = self.err.isatty()  # tool activity and the status line, on a terminal only
        self.style = Style(color and self.live)
        self.view = AttachView(self.style, width=shutil.get_terminal_size().columns - 1)
        self.status = TurnStatus()
        self.hold = MarkerHold()
        self.item_id: str | None = None
        self.streamed = ""  # the text shown of the current message
        self.gapped = False  # some of the turn's events were folded out of the log unseen
        self.wrote = False
        self.at_line_start = True
        self.status_shown = False  # a status line is drawn on stderr (no newline after it)
        self.paused = False  # the thread's state as last seen, for aside()
        self.asked: set[str] = set()  # approvals of our turn we said we wait for

    # -- events ------------------------------------------------------------------------------

    def show(self, event: dict[str, Any]) -> None:
        """An event of our turn (or run)."""
        kind = event.get("event")
        data = event.get("data") or {}
        if kind == "input.delivered":
            self.status.feed({**event, "event": "turn.started"})  # our turn's clock starts here
        else:
            self.status.feed(event)
        if kind == "turn.delta":
            self._text(str(data.get("delta", "")), data.get("item_id"))
        elif kind == "events.gap":
            self.gapped = True
        elif kind == "item.completed" and (data.get("item") or {}).get("role") == "assistant":
            self._completed(data["item"])
        elif kind in TOOL_EVENTS and self.live:
            self._lines(self.view.feed(terminal_safe(event)))
        elif kind in ("turn.retry", "turn.waiting"):
            self.note(waiting_text(kind, terminal_safe(data)))
        elif kind == "approval.requested":
            self._asked(terminal_safe(data))

    def aside(self, event: dict[str, Any]) -> None:
        """An event of the thread outside our turn: a pause or a resume changes our wait;
        the answer to an approval we said we wait for (it names no turn)."""
        data = event.get("data") or {}
        if event.get("event") == "approval.resolved" and data.get("request_id") in self.asked:
            self.asked.discard(data["request_id"])
            decision = str(data.get("decision"))
            self.note(f"{DECISIONS.get(decision, decision)}: {data['request_id']}")
            return
        if event.get("event") != "thread.state":
            return
        paused = (event.get("data") or {}).get("state") == "paused"
        if paused != self.paused:
            self.paused = paused
            self.note("the thread was paused: the input waits until `echs resume`" if paused else "the thread was resumed")

    def _asked(self, data: dict[str, Any]) -> None:
        request_id = str(data.get("request_id"))
        self.asked.add(request_id)
        summary = approval_text(data, 200)
        self.note(
            f"waiting for approval of {data.get('tool')}: {summary}\n"
            f"      answer with `echs approve {request_id}` or `echs deny {request_id}`"
        )

    # -- the reply on stdout -----------------------------------------------------------------

    def _completed(self, item: dict[str, Any]) -> None:
        """A whole message: shown if its deltas were not (or not all) seen."""
        whole = content_text(item)
        if self.item_id is None:
            self._text(split_done(whole)[0], None, whole=True)  # a reply whose deltas the log no longer holds
        elif self.gapped and whole != self.streamed:
            self.note("part of this reply was folded out of the daemon's log before it could be shown; here it is whole:")
            self._text(split_done(whole)[0], "whole", whole=True)
        else:
            self._write(self.hold.end())
        self.gapped = False

    def _text(self, text: str, item_id: Any, *, whole: bool = False) -> None:
        if item_id != self.item_id and self.wrote:
            self._write(self.hold.end())
            self._newline()
            self._emit("\n")
        if item_id != self.item_id:
            self.streamed = ""
            self.hold = MarkerHold()
        self.item_id = item_id or self.item_id or "replayed"
        self.streamed += text
        self._write(text if whole else self.hold.feed(text))

    def _write(self, text: str) -> None:
        if not text:
            return
        self._emit(printable(text) if self.terminal else text)
        self.wrote = True

    def _emit(self, text: str) -> None:
        self._clear_status()
        # color=True: click would otherwise strip what looks like a colour code from a pipe.
        click.echo(text, nl=False, file=self.out, color=True)
        self.at_line_start = text.endswith("\n")

    def _newline(self) -> None:
        if not self.at_line_start:
            self._emit("\n")

    # -- stderr ----------------------------------------------------------------------------

    def note(self, message: str, *, prefix: bool = True) -> None:
        self._newline()
        self._clear_status()
        click.echo(f"echs: {message}" if prefix else message, err=True, file=self.err)

    def _lines(self, lines: list[str]) -> None:
        for line in lines:
            self.note(line, prefix=False)

    def tick(self, now: float | None = None) -> None:
        """Redraw the status line (a terminal only, and never over a reply line half written)."""
        if not self.live or (self.terminal and not self.at_line_start):
            return
        detail = f"waiting for approval ({', '.join(sorted(self.asked))})" if self.asked else self.view.partial()
        line = self.status.line(time.time() if now is None else now, detail, self.view.width)
        if line is None:
            self._clear_status()
            return
        self.err.write(CLEAR_LINE + self.style.dim(line))
        self.err.flush()
        self.status_shown = True

    def _clear_status(self) -> None:
        if self.status_shown:
            self.err.write(CLEAR_LINE)
            self.err.flush()
            self.status_shown = False

    def finish(self, watch: TurnWatch) -> None:
        self._write(self.hold.end())
        self._newline()
        self._clear_status()
        self._lines(self.view.flush())
        data = terminal_safe(watch.final.get("data") or {})
        if watch.outcome == "turn.interrupted":
            self.note(f"turn interrupted ({data.get('reason', 'interrupt')})")
        elif watch.outcome == "turn.error":
            error = data.get("error") or {}
            self.note(f"turn failed: {error.get('code', 'error')}: {error.get('message', '')}")
        elif watch.outcome == "input.dropped":
            self.note(f"input {watch.input_id} was dropped: {data.get('reason', '')}")
        elif watch.outcome == "thread.killed":
            self.note("the thread was killed")
        elif watch.outcome == "run.finished":
            turns = data.get("turns")
            self.note(f"autonomous run finished after {turns} turn{'s' if turns != 1 else ''} ({RUN_ENDS.get(data.get('reason'), data.get('reason'))})")
