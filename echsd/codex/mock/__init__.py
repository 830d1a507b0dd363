"""A scripted Responses API upstream: a real HTTP/1.1 server (trio + h11) on loopback.

Routes: ``POST /v1/responses`` (or ``/responses``, or the ChatGPT backend's
``/backend-api/codex/responses``) streams SSE exactly like the Responses API;
``.../responses/compact`` compacts; ``POST /oauth/token`` is a fake OAuth refresh endpoint.
With ``inspect`` (``echsd mock-upstream`` always; the daemon's built-in mock never),
``GET /_mock/requests`` lists recorded requests (Authorization redacted, plus
``auth_scheme`` and ``bearer_sha256``) and ``POST /_mock/reset`` forgets them and the fault
counts. Recorded requests are a ring bounded in count and bytes. With ``require_token``
every model request needs ``Authorization: Bearer <token>`` (else 401); a refresh at
``/oauth/token`` makes the newly issued access token the accepted one.

Before a step is served the request is checked as the real endpoints check it
(``checks``): a non-reasoning model sent ``reasoning`` or encrypted-reasoning ``include``,
an effort the model does not take, ``parallel_tool_calls`` without tools, empty
instructions on the backend path, a reasoning summary for an unverified organisation,
reasoning items another model made, an input past the context window: each gets the real
status and error body.

Scripting language (in full in docs/mock-upstream.md)
-----------------------------------------------------
A *step* is one model response: ``text`` (``deltas``, ``delay_ms``, ``chunks``), ``repeat``
(also time-stamped deltas), ``reasoning``, ``calls``, ``usage``, ``ttfb_ms``, ``rate_limits`` (``x-codex-*`` headers
and a ``codex.rate_limits`` event), and a ``fault``: ``http`` (``status``, ``retry_after``,
``message``, ``code``, ``error_type``, ``resets_in_seconds``), ``drop``, ``stall``,
``malformed``, ``junk`` (a non-JSON data line; the stream goes on), ``failed``,
``incomplete``, ``error``, ``usage_limit``; ``after_deltas``; ``times``.

Which step answers (``selection``): only the last user message scripts the reply, by a
``mock: <JSON>`` line (a step, a list of steps, or ``{"steps": [...], "endpoint":
{"org_verified": false, "context_window": N}}``), else by the first rule of a script file
(``{"rules": [{"match", "steps", "endpoint"?}], "default": [...], "endpoint"?: {...}}``)
matching its text; the step served is the number of model response rounds after it, and
``done`` past the last one. Otherwise the reply is ``mock reply to: <text>``.
"""

from echsd.codex.mock.app import RecordedRequest
from echsd.codex.mock.script import Conditions, Script, ScriptError, load_script, parse_script
from echsd.codex.mock.server import MockUpstream, open_mock_upstream

__all__ = ["Conditions", "MockUpstream", "RecordedRequest", "Script", "ScriptError", "load_script", "open_mock_upstream", "parse_script"]
