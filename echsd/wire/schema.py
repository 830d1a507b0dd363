"""The wire's op table, made from the op classes (``echsd.ops``): validation, dispatch, the
client library's methods (``echsd.wire.requests``) and ``docs/protocol.md`` come from it.

Params are checked for shape and size (``echsd.wire.params``: type, required, allowed
values, limits, nesting); meaning (an existing thread, a valid cwd) is checked by the layer
that owns it. An explicit ``null`` for an optional param means "not given". Importing this
module (as the thin client does) loads nothing of the daemon. To add an op: see
``docs/architecture.md`` (its class in ``echsd/ops/``, its handler, a test), then
regenerate the docs with ``python -m echsd.wire.docs > docs/protocol.md``.
"""

from __future__ import annotations

from echsd.ops import WIRE_OPS
from echsd.ops.base import Op

OpSpec = type[Op]  # an op class is its own spec: name, params, validate, docs, method

OPS: tuple[OpSpec, ...] = WIRE_OPS
OPS_BY_NAME: dict[str, OpSpec] = {spec.op_name: spec for spec in OPS}

ERROR_CODES: dict[str, str] = {
    "unauthorized": "missing or wrong `hello` (the connection is then closed)",
    "bad_request": "malformed frame or request, unknown/missing/mistyped param or one over its limit (named in the message)",
    "unknown_op": "no such op",
    "not_found": "no such thread (or blackboard entry)",
    "conflict": "the change conflicts with the current state (e.g. a version mismatch)",
    "invalid_state": "not allowed in the thread's state (e.g. input to a killed thread)",
    "timeout": "the thread did not answer in time",
    "too_large": "the answer would exceed the frame limit; ask for it in pages (`offset`/`limit`)",
    "unavailable": "the daemon is starting or shutting down",
    "upstream_error": "the model endpoint failed a request made for this op",
    "internal": "a bug; the daemon logged it and stays up",
}
