"""The Codex app-server protocol's JSON Schema (``schema/``), as a checker of server messages.

Every message the listener sends is one of: a response to a client request (its result
checked against that method's ``...Response`` type, an error against ``JSONRPCError``), a
notification (``ServerNotification``: the params type of its method), or a request of
ours (``ServerRequest``). A method's response type is named after its params type
(``ThreadStartParams`` -> ``ThreadStartResponse``), as in Codex's protocol crate.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft7Validator

SCHEMA_FILE = Path(__file__).parent / "schema" / "codex_app_server_protocol.schemas.json"
RESPONSES_WITHOUT_PARAMS = {"configRequirements/read": "ConfigRequirementsReadResponse", "account/rateLimits/read": "GetAccountRateLimitsResponse"}


class ProtocolViolation(AssertionError):
    pass


@cache
def _definitions() -> dict[str, Any]:
    return json.loads(SCHEMA_FILE.read_text())["definitions"]  # type: ignore[no-any-return]


def _ref_of(name: str) -> str:
    definitions = _definitions()
    if name in definitions:
        return f"#/definitions/{name}"
    if name in definitions["v2"]:
        return f"#/definitions/v2/{name}"
    raise ProtocolViolation(f"the schema has no type {name}")


@cache
def _validator(ref: str) -> Draft7Validator:
    return Draft7Validator({"$ref": ref, "definitions": _definitions()})


@cache
def _methods(union: str) -> dict[str, str | None]:
    """method -> params $ref, for ClientRequest / ServerRequest / ServerNotification."""
    entries = _definitions()[union]["oneOf"]
    return {e["properties"]["method"]["enum"][0]: e["properties"].get("params", {}).get("$ref") for e in entries}


def client_methods() -> set[str]:
    return set(_methods("ClientRequest"))


def response_type(method: str) -> str:
    if method in RESPONSES_WITHOUT_PARAMS:
        return RESPONSES_WITHOUT_PARAMS[method]
    params = _methods("ClientRequest").get(method)
    if params is None:
        raise ProtocolViolation(f"{method} is not a request of the stable protocol, so it may only be answered with an error")
    return params.rsplit("/", 1)[1].replace("Params", "Response")


def check(ref: str, value: Any, what: str) -> None:
    errors = sorted(_validator(ref).iter_errors(value), key=lambda e: list(e.absolute_path))
    if errors:
        details = "; ".join(f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}" for e in errors[:5])
        raise ProtocolViolation(f"{what} does not match the schema: {details}\n{json.dumps(value)[:2000]}")


def check_server_message(message: Any, requested: dict[Any, str]) -> None:
    """Check one message from the server; ``requested`` maps our request ids to methods."""
    if not isinstance(message, dict):
        raise ProtocolViolation(f"a frame must hold one JSON object, got {message!r}")
    if "jsonrpc" in message:
        raise ProtocolViolation("the TUI's dialect has no jsonrpc key")
    if "method" in message:
        union = "ServerRequest" if "id" in message else "ServerNotification"
        check(f"#/definitions/{'JSONRPCRequest' if 'id' in message else 'JSONRPCNotification'}", message, "the frame")
        methods = _methods(union)
        if message["method"] not in methods:
            raise ProtocolViolation(f"{message['method']} is not a {union} of the protocol")
        params_ref = methods[message["method"]]
        if params_ref is None:
            if message.get("params") is not None:
                raise ProtocolViolation(f"{message['method']} takes no params")
        else:
            check(params_ref, message.get("params"), f"{union} {message['method']}")
        return
    if "error" in message:
        check("#/definitions/JSONRPCError", message, "error response")
        return
    check("#/definitions/JSONRPCResponse", message, "response")
    method = requested.get(message["id"])
    if method is None:
        raise ProtocolViolation(f"a response to id {message['id']!r}, which was never requested")
    check(_ref_of(response_type(method)), message["result"], f"result of {method}")
