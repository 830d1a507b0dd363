"""The client library's request methods, made from the op table (``schema.OPS``).

A subclass provides ``request(op, params)``; every op with a ``method`` in its spec then
has that method here (e.g. ``thread.send`` -> ``send(thread_id, text, *, mode=None,
client_msg_id=None)``): the spec's ``positional`` params may be passed by position, every
param by keyword, and params left as None are not sent (except a nullable one passed as
None, e.g. ``blackboard_set(key, None)``: a null value). Shared by the async ``Client``
and the ``BlockingClient``.

The methods are made on first use: the op table (``echsd.ops``, ~45 ms to import) is then
loaded, so a command that only calls ``request`` (``echs status``) never pays for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable

if TYPE_CHECKING:
    from echsd.wire.schema import OpSpec


class RequestHelpers:
    async def request(self, op: str, params: dict[str, Any] | None = None) -> Any:
        raise NotImplementedError

    async def _call(self, op: str, **params: Any) -> Any:
        """Send ``op`` with the params that are not None, and the nullable ones given as None."""
        from echsd.wire.schema import OPS_BY_NAME

        spec = OPS_BY_NAME[op]
        return await self.request(op, {k: v for k, v in params.items() if v is not None or spec.by_name[k].nullable})

    def __getattr__(self, name: str) -> Any:
        """Called only for a name the class lacks: the request methods before they exist."""
        if name.startswith("_") or not _install_methods():
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(self, name)


def _method(spec: OpSpec) -> Callable[..., Awaitable[Any]]:
    assert spec.method is not None
    name = spec.method

    async def method(self: RequestHelpers, *args: Any, **kwargs: Any) -> Any:
        if len(args) > len(spec.positional):
            raise TypeError(f"{name}() takes {len(spec.positional)} positional argument(s) ({', '.join(spec.positional)})")
        params = dict(zip(spec.positional, args))
        for key, value in kwargs.items():
            if key not in spec.by_name:
                raise TypeError(f"{name}() got an unexpected keyword argument {key!r}")
            if key in params:
                raise TypeError(f"{name}() got multiple values for argument {key!r}")
            params[key] = value
        return await self._call(spec.op_name, **params)

    method.__name__ = method.__qualname__ = name
    params = ", ".join(p.name + ("" if p.required else "=None") for p in spec.params)
    method.__doc__ = f"``{spec.op_name}``({params}): {spec.summary}\n\nReturns {spec.result}."
    return method


_installed = False


def _install_methods() -> bool:
    """Give ``RequestHelpers`` one method per op that names one; False when done before."""
    global _installed
    if _installed:
        return False
    from echsd.wire.schema import OPS

    for spec in OPS:
        if spec.method is not None:
            setattr(RequestHelpers, spec.method, _method(spec))
    _installed = True
    return True
