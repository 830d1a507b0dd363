"""What the real endpoints refuse, refused the same way (pure): status and body, word for word.

Checked before any step is served, in this order, against the models the mock knows (the
shipped catalog's and the script's ``models``, see ``listing``; a model it does not know is
taken as accepting anything):

- ChatGPT backend path (``/backend-api/codex/responses``): no ``instructions`` or empty
  ones -> 400 ``{"detail": "Instructions are required"}``; ``input`` not a list ->
  400 ``{"detail": "Input must be a list"}``; ``store`` not false -> 400
  ``{"detail": "Store must be set to false"}``.
- ``parallel_tool_calls`` without ``tools`` -> 400, ``param: parallel_tool_calls``.
- a model that does not reason sent ``reasoning`` -> 400 ``unsupported_parameter``
  ("Unsupported parameter: 'reasoning.effort' is not supported with this model.");
  sent ``include: ["reasoning.encrypted_content"]`` -> 400 ``param: include``
  ("Encrypted content is not supported with this model.").
- an effort the model does not accept -> 400 ``unsupported_value`` naming the accepted ones.
- ``reasoning.summary`` while the conditions say the organisation is not verified -> 400
  ``param: reasoning.summary`` ("Your organization must be verified to generate
  reasoning summaries. ...").
- a reasoning item whose encrypted content the mock made for another model -> 400
  ``invalid_encrypted_content`` ("The encrypted content gAAA...DQ== could not be verified.");
  with ``store: false``, one without encrypted content: with an id, 400 "Item with id
  'rs_...' not found. Items are not persisted when `store` is set to false. ..." (``param:
  input``), without one, 400 ``invalid_encrypted_content``.
- an input estimated (4 bytes a token) past the context window (the conditions', else the
  catalog's) -> 400 ``context_length_exceeded``.
"""

from __future__ import annotations

import base64
from typing import Any

from typing import Mapping

from echsd.codex.mock.script import Conditions, ListedModel

CODEX_BACKEND_PREFIX = "/backend-api/codex"
ENCRYPTED_PREFIX = "mockenc:"
VERIFY_MESSAGE = (
    "Your organization must be verified to generate reasoning summaries. Please go to: "
    "https://platform.openai.com/settings/organization/general and click on Verify Organization. "
    "If you just verified, it can take up to 15 minutes for access to propagate."
)
CONTEXT_MESSAGE = "Your input exceeds the context window of this model. Please adjust your input and try again."
UNREADABLE_MESSAGE = "The encrypted content could not be verified. Reason: Encrypted content could not be decrypted or parsed."

Refusal = tuple[int, dict[str, Any]]


def error_body(
    message: str, *, kind: str = "invalid_request_error", code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """The OpenAI API's error shape."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def encrypted_reasoning(model: str, text: str) -> str:
    """The mock's opaque ``encrypted_content``: it knows which model made it."""
    return f"{ENCRYPTED_PREFIX}{model}:" + base64.b64encode(text.encode()).decode()


def _made_for(content: Any) -> str | None:
    if not isinstance(content, str) or not content.startswith(ENCRYPTED_PREFIX):
        return None
    model, sep, _ = content[len(ENCRYPTED_PREFIX) :].partition(":")
    return model if sep else None


def _listing(values: tuple[str, ...]) -> str:
    quoted = [f"'{v}'" for v in values]
    if len(quoted) <= 2:
        return " and ".join(quoted)
    return ", ".join(quoted[:-1]) + f", and {quoted[-1]}"


def _abbreviated(content: str) -> str:
    return f"{content[:4]}...{content[-4:]}" if len(content) > 12 else content


def _backend(path: str, body: dict[str, Any]) -> Refusal | None:
    if not path.startswith(CODEX_BACKEND_PREFIX):
        return None
    instructions = body.get("instructions")
    if not isinstance(instructions, str) or not instructions.strip():
        return 400, {"detail": "Instructions are required"}
    if not isinstance(body.get("input"), list):
        return 400, {"detail": "Input must be a list"}
    if body.get("store") is not False:
        return 400, {"detail": "Store must be set to false"}
    return None


def _reasoning(body: dict[str, Any], info: ListedModel | None, conditions: Conditions) -> Refusal | None:
    model = body.get("model")
    reasoning = body.get("reasoning")
    include = body.get("include")
    if info is not None and info.efforts == ():
        if reasoning is not None:
            message = "Unsupported parameter: 'reasoning.effort' is not supported with this model."
            return 400, error_body(message, code="unsupported_parameter", param="reasoning.effort")
        if isinstance(include, list) and "reasoning.encrypted_content" in include:
            return 400, error_body("Encrypted content is not supported with this model.", param="include")
    if not isinstance(reasoning, dict):
        return None
    effort = reasoning.get("effort")
    if info is not None and info.efforts is not None and effort is not None and effort not in info.efforts:
        message = (
            f"Unsupported value: '{effort}' is not supported with the '{model}' model. "
            f"Supported values are: {_listing(info.efforts)}."
        )
        return 400, error_body(message, code="unsupported_value", param="reasoning.effort")
    if reasoning.get("summary") is not None and not conditions.org_verified:
        return 400, error_body(VERIFY_MESSAGE, code="unsupported_value", param="reasoning.summary")
    return None


def _encrypted(items: list[Any], model: str, stored: bool) -> Refusal | None:
    for item in items:
        if isinstance(item, dict) and item.get("type") == "reasoning":
            content = item.get("encrypted_content")
            if not content and not stored:
                if item.get("id"):
                    message = (
                        f"Item with id '{item['id']}' not found. Items are not persisted when `store` is set to false. "
                        "Try again with `store` set to true, or remove this item from your input."
                    )
                    return 400, error_body(message, param="input")
                return 400, error_body(UNREADABLE_MESSAGE, code="invalid_encrypted_content")
            made_for = _made_for(content)
            if made_for is not None and made_for != model:
                return encrypted_refusal(content)
    return None


def encrypted_refusal(content: str) -> Refusal:
    """The endpoint cannot read this reasoning (another model's, or a key it no longer has)."""
    return 400, error_body(f"The encrypted content {_abbreviated(content)} could not be verified.", code="invalid_encrypted_content")


def first_encrypted(items: list[Any]) -> str | None:
    return next(
        (item["encrypted_content"] for item in items if isinstance(item, dict) and item.get("type") == "reasoning" and isinstance(item.get("encrypted_content"), str) and item["encrypted_content"]),
        None,
    )


def _context(info: ListedModel | None, size: int, conditions: Conditions) -> Refusal | None:
    window = conditions.context_window
    if window is None:
        window = info.context_window if info is not None else None
    if window is not None and size // 4 > window:
        return 400, error_body(CONTEXT_MESSAGE, code="context_length_exceeded", param="input")
    return None


def refusal(
    path: str, body: dict[str, Any], items: list[Any], size: int, conditions: Conditions, models: Mapping[str, ListedModel]
) -> Refusal | None:
    """The real endpoint's answer to a request it refuses, or None to serve it."""
    model = body.get("model") if isinstance(body.get("model"), str) else ""
    info = models.get(model)
    found = _backend(path, body)
    if found is None and body.get("parallel_tool_calls") is not None and not body.get("tools"):
        message = "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are specified."
        found = 400, error_body(message, param="parallel_tool_calls")
    return (
        found
        or _reasoning(body, info, conditions)
        or _encrypted(items, model, body.get("store") is True)
        or _context(info, size, conditions)
    )
