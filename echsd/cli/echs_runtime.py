"""What every ``echs`` verb shares: the connection options, ``--json``, running one
request session against the daemon, and the exit-code rules of CONTRACT.md 1.2.

Exit codes: 0 success; 1 daemon unreachable or a request failed (one line on stderr);
2 usage error (click's own); 3 and 4 are returned by ``send --wait`` (turn interrupted,
turn error). Heavy imports (trio, the client library) happen inside ``run`` so that
``echs --help`` and usage errors stay instant.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterator, NoReturn

import click

if TYPE_CHECKING:
    from echsd.wire.client import Client

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 3
EXIT_TURN_ERROR = 4
DEFAULT_TIMEOUT_S = 10.0  # a one-shot verb's wait for the daemon (connecting, then each answer)
KILL_TIMEOUT_S = 30.0  # kill stops the turns of a whole subtree; rm deletes its whole log
COMPACT_TIMEOUT_S = 600.0  # compact waits for a model request


class Refusal(Exception):
    """Raised by an action for a failure that is ours, not the daemon's (e.g. an
    ambiguous thread id): ``run`` prints ``message`` and exits with ``code``."""

    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass
class EchsOptions:
    """The global options; verbs may switch ``json`` on (``--json`` after the verb)."""

    state_dir: str | None = None
    socket: str | None = None
    url: str | None = None
    token_file: str | None = None
    json: bool = False
    timeout: float | None = None  # --timeout / ECHS_TIMEOUT; None: the verb's default

    @property
    def color(self) -> bool:
        """Colour only on a terminal, never with NO_COLOR (https://no-color.org) or --json."""
        return not self.json and sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def options_of(ctx: click.Context) -> EchsOptions:
    return ctx.ensure_object(EchsOptions)


def _set_json(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        options_of(ctx).json = True


def json_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--json`` accepted after any verb too (same effect as before it)."""
    return click.option(
        "--json", is_flag=True, expose_value=False, callback=_set_json, help="Print JSON only (one document or JSON Lines)."
    )(func)


def fail(message: str, code: int = EXIT_FAILED) -> NoReturn:
    """One line on stderr, then exit."""
    click.echo(f"echs: {message}", err=True)
    raise SystemExit(code)


def run(
    ctx: click.Context,
    action: Callable[[Client], Awaitable[int | None]],
    *,
    streaming: bool = False,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> NoReturn:
    """Connect, run ``action(client)``, and exit with its code (None: 0).

    One-shot verbs use the ``BlockingClient`` (no event loop, no trio import: ~150 ms
    less start-up) and wait ``timeout`` seconds at most for each answer (``--timeout``
    wins); ``streaming`` ones (events --follow, send --wait, attach) need trio, and the
    timeout bounds only their connecting.
    """
    from echsd.wire.errors import WireError

    options = options_of(ctx)
    connection = {
        "socket": options.socket,
        "url": options.url,
        "state_dir": options.state_dir,
        "token_file": options.token_file,
        "timeout": options.timeout if options.timeout is not None else timeout,
    }
    try:
        code = _run_streaming(action, connection) if streaming else _run_oneshot(action, connection)
    except BaseException as exc:  # trio may deliver ours inside exception groups
        leaves = list(_leaves(exc))
        if all(isinstance(leaf, (WireError, Refusal)) for leaf in leaves):
            first = leaves[0]
            if isinstance(first, Refusal):
                fail(first.message, first.code)
            hint = " (wait longer with --timeout SECONDS or ECHS_TIMEOUT)" if "did not answer within" in first.message else ""  # type: ignore[attr-defined]
            fail(first.message + hint)  # type: ignore[attr-defined]
        if all(isinstance(leaf, BrokenPipeError) for leaf in leaves) and stdout_closed():
            # The reader went away (`echs events -f | head`): not a failure of ours.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise SystemExit(EXIT_OK) from None
        if all(isinstance(leaf, ConnectionError) for leaf in leaves):
            # The daemon's socket broke (a broken pipe here is the daemon's, not stdout's).
            reason = leaves[0].strerror or type(leaves[0]).__name__  # type: ignore[attr-defined]
            fail(
                f"the connection to the daemon broke ({reason}); the daemon closes a connection that sends "
                "a message over its frame limit ([tuning] max_message_bytes), and when it stops"
            )
        raise
    raise SystemExit(code or EXIT_OK)


def output_width() -> int | None:
    """How wide lines may be: ``COLUMNS`` when set, else the terminal's width when stdout
    is one; None (no limit) when writing to a pipe or file."""
    import shutil

    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def stdout_closed() -> bool:
    """Whether nobody reads our stdout any more (a pipe or socket whose reader left)."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _fd, events in poller.poll(0))
    except (OSError, ValueError):  # no stdout at all
        return True


def _run_oneshot(action: Callable[[Any], Awaitable[int | None]], connection: dict[str, Any]) -> int | None:
    from echsd.wire.blocking import blocking_connect, drive

    with blocking_connect(
        connection["socket"],
        connection["url"],
        state_dir=connection["state_dir"],
        token_file=connection["token_file"],
        timeout=connection["timeout"],
    ) as client:
        return drive(action(client))  # type: ignore[arg-type]


def _run_streaming(action: Callable[[Client], Awaitable[int | None]], connection: dict[str, Any]) -> int | None:
    import trio

    from echsd.wire.client import connect

    async def session() -> int | None:
        async with connect(**connection) as client:
            return await action(client)

    return trio.run(session)


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def dumps(value: Any, *, pretty: bool = False) -> str:
    import json  # here: ``echs status`` without ``--json`` never needs it

    return json.dumps(value, ensure_ascii=False, indent=2 if pretty else None, default=str)


def echo_json(value: Any) -> None:
    """One JSON document on stdout."""
    click.echo(dumps(value, pretty=True))


def echo_json_line(value: Any) -> None:
    """One line of a JSON Lines stream (flushed, so pipes see it at once)."""
    click.echo(dumps(value))


async def until_signalled(body: Callable[[], Awaitable[None]]) -> None:
    """Run ``body`` until it returns or SIGINT/SIGTERM arrives (then return quietly: a
    follow verb stopped with Ctrl-C exits 0)."""
    import signal

    import trio

    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:

            async def stop_on_signal() -> None:
                async for _ in signals:
                    nursery.cancel_scope.cancel()

            nursery.start_soon(stop_on_signal)
            await body()
            nursery.cancel_scope.cancel()
