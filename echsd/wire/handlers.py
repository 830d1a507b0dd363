"""One handler per op in ``schema.OPS``: validated params in, result out.

Handlers map the wire onto ``ThreadService`` (and the connection's subscriptions); every
failure is an ``EchsError`` whose ``code`` goes on the wire. A test checks that this table
and ``schema.OPS`` name the same ops.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable

if TYPE_CHECKING:
    from echsd.wire.session import Session

Handler = Callable[["Session", dict[str, Any]], Awaitable[Any]]
HANDLERS: dict[str, Handler] = {}


def _op(name: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        HANDLERS[name] = fn
        return fn

    return register


@_op("hello")
async def _hello(session: Session, p: dict[str, Any]) -> Any:
    return await session.authenticate(p["token"])


@_op("status")
async def _status(session: Session, p: dict[str, Any]) -> Any:
    return session.service.status()


@_op("thread.create")
async def _create(session: Session, p: dict[str, Any]) -> Any:
    return await session.service.create(**p)


@_op("thread.list")
async def _list(session: Session, p: dict[str, Any]) -> Any:
    return session.service.list()


@_op("thread.get")
async def _get(session: Session, p: dict[str, Any]) -> Any:
    return session.service.get(p["thread_id"])


@_op("thread.configure")
async def _configure(session: Session, p: dict[str, Any]) -> Any:
    return await session.service.configure(p["thread_id"], p["config"])


@_op("thread.send")
async def _send(session: Session, p: dict[str, Any]) -> Any:
    return await session.service.send(p["thread_id"], p["text"], p.get("mode"), p.get("client_msg_id"))


@_op("thread.interrupt")
async def _interrupt(session: Session, p: dict[str, Any]) -> Any:
    return await session.service.interrupt(p["thread_id"], p.get("clear_queue", False))


@_op("thread.pause")
async def _pause(session: Session, p: dict[str, Any]) -> Any:
    return await session.service.pause(p["thread_id"])


@_op("thread.resume")
async def _resume(session: Session, p: dict[str, Any]) -> Any:
    return await session.service.resume(p["thread_id"])


@_op("thread.kill")
async def _kill(session: Session, p: dict[str, Any]) -> Any:
    return await session.service.kill(p["thread_id"])


@_op("thread.history")
async def _history(session: Session, p: dict[str, Any]) -> Any:
    return await session.service.history(p["thread_id"])


@_op("thread.events")
async def _events(session: Session, p: dict[str, Any]) -> Any:
    return await session.service.events(p["thread_id"], p.get("since", 0), p.get("limit"))


@_op("thread.compact")
async def _compact(session: Session, p: dict[str, Any]) -> Any:
    return await session.service.compact(p["thread_id"])


@_op("subscribe")
async def _subscribe(session: Session, p: dict[str, Any]) -> Any:
    return await session.subscriptions.subscribe(p["thread_id"], p.get("since"))


@_op("unsubscribe")
async def _unsubscribe(session: Session, p: dict[str, Any]) -> Any:
    return session.subscriptions.unsubscribe(p["thread_id"])
