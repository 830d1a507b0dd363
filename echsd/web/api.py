"""The web view's JSON API: each handler builds an op (checked as on the wire) and runs it
through the router, like every other door; none touches a thread itself.

A handler is ``async (context, request) -> JSON value``; the app checks the session, the
CSRF token and the origin before it runs, and turns errors into statuses.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from echsd.ops.base import Op
from echsd.ops.daemon import BoardList, ListApprovals, RespondApproval
from echsd.ops.threads import Events, Get, Interrupt, Kill, ListThreads, Pause, Resume, Send, Tree, Why
from echsd.web.context import WebContext
from echsd.web.http import HttpError, HttpRequest
from echsd.wire.params import ParamsError


Handler = Callable[[WebContext, HttpRequest], Awaitable[Any]]
CONTROLS: dict[str, type[Op]] = {"interrupt": Interrupt, "pause": Pause, "resume": Resume, "kill": Kill}


def build(cls: type[Op], params: dict[str, Any]) -> Op:
    """The op a request asks for, its params checked as the wire checks them."""
    try:
        return cls.from_wire({key: value for key, value in params.items() if value is not None})
    except ParamsError as exc:
        raise HttpError(400, "bad_request", str(exc)) from None


async def threads(context: WebContext, request: HttpRequest) -> Any:
    return await context.router.run(ListThreads())


async def tree(context: WebContext, request: HttpRequest) -> Any:
    return await context.router.run(Tree())


async def thread(context: WebContext, request: HttpRequest) -> Any:
    return await context.router.run(build(Get, {"thread_id": request.params["thread_id"]}))


async def why(context: WebContext, request: HttpRequest) -> Any:
    return await context.router.run(build(Why, {"thread_id": request.params["thread_id"], "limit": request.int_query("limit")}))


async def events(context: WebContext, request: HttpRequest) -> Any:
    params = {"thread_id": request.params["thread_id"], "since": request.int_query("since"), "limit": request.int_query("limit")}
    return await context.router.run(build(Events, params))


async def send(context: WebContext, request: HttpRequest) -> Any:
    body = await request.json()
    params = {"thread_id": request.params["thread_id"], "text": body.get("text"), "mode": body.get("mode"), "client_msg_id": body.get("client_msg_id")}
    return await context.router.run(build(Send, params))


async def control(context: WebContext, request: HttpRequest) -> Any:
    cls = CONTROLS.get(request.params["action"])
    if cls is None:
        raise HttpError(404, "not_found", f"no control {request.params['action']!r}; one of {', '.join(CONTROLS)}")
    params: dict[str, Any] = {"thread_id": request.params["thread_id"]}
    if cls is Interrupt:
        params["clear_queue"] = bool((await request.json()).get("clear_queue"))
    return await context.router.run(build(cls, params))


async def approvals(context: WebContext, request: HttpRequest) -> Any:
    return await context.router.run(ListApprovals())


async def decide(context: WebContext, request: HttpRequest) -> Any:
    body = await request.json()
    params = {"request_id": request.params["request_id"], "decision": body.get("decision"), "always": body.get("always")}
    return await context.router.run(build(RespondApproval, params))


async def blackboard(context: WebContext, request: HttpRequest) -> Any:
    return await context.router.run(build(BoardList, {"prefix": request.query.get("prefix") or ""}))
