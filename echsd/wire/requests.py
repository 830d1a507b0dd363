"""The typed request helpers, shared by the async ``Client`` and the ``BlockingClient``.

A subclass provides ``request(op, params)``; every op of CONTRACT.md 3.2 on threads then
has a method here. Parameters that are None are left out of the request.
"""

from __future__ import annotations

from typing import Any


class RequestHelpers:
    async def request(self, op: str, params: dict[str, Any] | None = None) -> Any:
        raise NotImplementedError

    async def _call(self, op: str, **params: Any) -> Any:
        return await self.request(op, {k: v for k, v in params.items() if v is not None})

    async def status(self) -> dict[str, Any]:
        return await self._call("status")  # type: ignore[no-any-return]

    async def create_thread(
        self,
        *,
        cwd: str | None = None,
        model: str | None = None,
        reasoning: str | None = None,
        instructions: str | None = None,
        tools: list[str] | str | None = None,
        parent: str | None = None,
    ) -> dict[str, Any]:
        return await self._call(  # type: ignore[no-any-return]
            "thread.create", cwd=cwd, model=model, reasoning=reasoning, instructions=instructions, tools=tools, parent=parent
        )

    async def list_threads(self) -> list[dict[str, Any]]:
        return await self._call("thread.list")  # type: ignore[no-any-return]

    async def get_thread(self, thread_id: str) -> dict[str, Any]:
        return await self._call("thread.get", thread_id=thread_id)  # type: ignore[no-any-return]

    async def configure(self, thread_id: str, config: dict[str, Any]) -> dict[str, Any]:
        return await self._call("thread.configure", thread_id=thread_id, config=config)  # type: ignore[no-any-return]

    async def send(self, thread_id: str, text: str, *, mode: str | None = None, client_msg_id: str | None = None) -> dict[str, Any]:
        return await self._call("thread.send", thread_id=thread_id, text=text, mode=mode, client_msg_id=client_msg_id)  # type: ignore[no-any-return]

    async def interrupt(self, thread_id: str, *, clear_queue: bool = False) -> dict[str, Any]:
        return await self._call("thread.interrupt", thread_id=thread_id, clear_queue=clear_queue)  # type: ignore[no-any-return]

    async def pause(self, thread_id: str) -> dict[str, Any]:
        return await self._call("thread.pause", thread_id=thread_id)  # type: ignore[no-any-return]

    async def resume(self, thread_id: str) -> dict[str, Any]:
        return await self._call("thread.resume", thread_id=thread_id)  # type: ignore[no-any-return]

    async def kill(self, thread_id: str) -> dict[str, Any]:
        return await self._call("thread.kill", thread_id=thread_id)  # type: ignore[no-any-return]

    async def history(self, thread_id: str) -> list[dict[str, Any]]:
        return await self._call("thread.history", thread_id=thread_id)  # type: ignore[no-any-return]

    async def compact(self, thread_id: str) -> dict[str, Any]:
        return await self._call("thread.compact", thread_id=thread_id)  # type: ignore[no-any-return]

    async def thread_events(self, thread_id: str, *, since: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        return await self._call("thread.events", thread_id=thread_id, since=since, limit=limit)  # type: ignore[no-any-return]
