"""``echs why ID``: what a thread waits on now, and the last things that happened to it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from echsd.cli.echs_ids import THREAD_ID, resolve_thread
from echsd.cli.echs_runtime import echo_json, json_option, options_of, run

if TYPE_CHECKING:
    from echsd.cli.render import Style
    from echsd.wire.client import Client


@click.command()
@click.argument("thread_id", type=THREAD_ID)
@click.option("--events", "limit", type=click.IntRange(1, 200), default=12, show_default=True, help="How many of the last events to show.")
@json_option
@click.pass_context
def why(ctx: click.Context, thread_id: str, limit: int) -> None:
    """Say what a thread waits on, with its last events.

    Why has it not moved? The model's stream (and how long since it last said anything), a tool (its process
    and command), an approval, sub-agents, a retry's backoff, a queue, a pause, or a
    worker given up. Streamed text and tool output are counted, not shown.
    """
    options = options_of(ctx)

    async def action(client: Client) -> None:
        thread = await client.why(await resolve_thread(client, thread_id), limit=limit)
        if options.json:
            echo_json(thread)
            return
        from echsd.cli.render import Style

        click.echo("\n".join(why_lines(thread, Style(options.color))), color=options.color)

    run(ctx, action)


def why_lines(thread: dict[str, Any], style: Style) -> list[str]:
    from echsd.cli.render import ago, tokens
    from echsd.cli.render_events import event_line
    from echsd.cli.render_thread import waiting_text

    state = str(thread.get("state"))
    waiting = thread.get("waiting_on")
    head = f"{style.bold(str(thread.get('thread_id')))}  {style.state(state)}"
    if thread.get("active_turn"):
        head += f"  (turn {thread['active_turn']})"
    lines = [head]
    if waiting:
        lines.append(f"waiting on: {waiting_text(waiting)}")
        lines.extend(f"  {line}" for line in _details(waiting, str(thread.get('thread_id'))))
    elif state == "killed":
        lines.append("waiting on nothing: the thread is killed")
    else:
        lines.append("waiting on nothing: the thread is idle (send it input to start a turn)")
    events = thread.get("last_events") or []
    streamed = thread.get("streamed") or {}
    if events:
        lines.append(f"last {len(events)} event{'s' if len(events) != 1 else ''}:")
        lines.extend(f"  {event_line(event, style)}" for event in events)
    if streamed.get("events"):
        last = streamed.get("last_ts")
        lines.append(
            style.dim(f"  … then {streamed['events']} streamed event(s) ({tokens(streamed.get('bytes'))} bytes), the last {ago(last)}")
            if last
            else style.dim(f"  … then {streamed['events']} streamed event(s)")
        )
    if not events and not streamed.get("events"):
        lines.append("no events yet")
    return lines


def _details(waiting: dict[str, Any], thread_id: str) -> list[str]:
    """The facts behind the one-line reason, one per line."""
    kind = waiting.get("kind")
    shown = {
        "model": ("model", "last_event_age_s"),
        "tool": ("tool", "call_id", "pid", "command", "runtime_s"),
        "approval": ("request_id", "tool", "call_id"),
        "agents": ("agents", "call_id"),
        "retry": ("attempt", "max_retries", "in_s", "reason"),
        "queue": ("behind", "queued", "reason"),
        "given_up": ("reason",),
    }.get(str(kind), ())
    from echsd.cli.render import duration, one_line

    lines = []
    for key in shown:
        value = waiting.get(key)
        if value is None:
            continue
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        if key.endswith("_s"):
            key, value = key[: -len("_s")], duration(float(value))
        lines.append(f"{key.replace('_', ' ')}: {one_line(str(value), 200)}")
    if kind == "approval":
        lines.append(f"answer it: echs approve {waiting.get('request_id')} (or echs deny)")
    if kind == "paused":
        lines.append(f"resume it: echs resume {thread_id}")
    return lines
