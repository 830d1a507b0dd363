"""A scripted Responses API upstream: a real HTTP/1.1 server (trio + h11) on loopback.

Routes: ``POST /v1/responses`` (or ``/responses``) streams SSE exactly like the Responses
API; ``POST /v1/responses/compact`` compacts; ``POST /oauth/token`` is a fake OAuth refresh
endpoint; ``GET /_mock/requests`` lists recorded requests (Authorization redacted, plus
``auth_scheme`` and ``bearer_sha256``); ``POST /_mock/reset`` forgets requests and fault
counts. With ``require_token`` every model request needs ``Authorization: Bearer <token>``
(else 401); a refresh at ``/oauth/token`` makes the newly issued access token the accepted one.

Scripting language (also in docs/mock-upstream.md)
--------------------------------------------------
A *step* is one model response, a JSON object with any of:

- ``text``: assistant message text, streamed as ``output_text`` deltas split at word
  boundaries, or into ``deltas: N`` even pieces; ``delay_ms`` pauses between deltas.
- ``repeat: {"chunk": "x", "count": N}``: N identical text deltas (benchmarks).
- ``reasoning``: reasoning summary text (``reasoning_summary_text`` deltas) in a reasoning
  item with a fake ``encrypted_content``; it comes first in the output.
- ``calls: [{"name", "arguments", "call_id"?}]``: function calls after the message, several
  = parallel calls. ``arguments`` is an object (sent as JSON) or a raw string (so malformed
  JSON can be scripted).
- ``usage``: overrides of ``input_tokens``, ``cached_tokens``, ``output_tokens``,
  ``reasoning_tokens``.
- ``ttfb_ms``: delay after the response headers, before the first event.
- ``fault``: ``"http"`` (``status`` default 500, ``retry_after``, ``message``, ``code``),
  ``"drop"`` (close the connection), ``"stall"`` (stop sending, keep the connection open),
  ``"malformed"`` (a data line that is not JSON), ``"failed"`` (``response.failed`` with
  ``code``, ``message``), ``"incomplete"`` (``response.incomplete`` with ``reason``),
  ``"error"`` (an ``error`` event with ``code``, ``message``). Parameters go beside it in the
  step or in an object: ``"fault": {"type": "http", "status": 503}``. ``after_deltas: N``:
  strike after N deltas (text, reasoning and argument deltas all count); default for
  drop/stall/malformed: before the first event; for failed/incomplete/error: right after
  ``response.in_progress``.
- ``times``: how many matching requests get the fault before the step is served normally
  (default: every time). Counted per (script, step) in the server.

A step with no text/repeat/reasoning/calls answers with the echo text (below).

Which step answers a request:

1. *Inline directive*: the last user message in ``input`` holding a line ``mock: <JSON>``
   (a step, a list of steps or ``{"steps": [...]}``) is the script. The step served is
   the number of model response rounds in ``input`` after that message; a round is a
   maximal run of model output items (assistant message, reasoning, function_call), so
   after step 0's calls and their outputs the next request gets step 1. Past the last
   step the reply is the plain text ``done``. Invalid JSON gets HTTP 400.
2. *Script file* (``--script FILE``, JSON or TOML):
   ``{"rules": [{"match": "substring", "steps": [...]}], "default": [steps]}``; the first
   rule whose ``match`` is in the last user message's text wins, else ``default``; same
   round indexing, counted after the last user message.
3. Otherwise a deterministic echo: ``mock reply to: <last user text, first 200 chars>``
   in word deltas.

Compaction keeps the user messages and adds one ``compaction`` item that remembers the
rounds it folded away, so scripted conversations continue at the right step after it.
"""

from echsd.codex.mock.app import RecordedRequest
from echsd.codex.mock.script import Script, ScriptError, load_script, parse_script
from echsd.codex.mock.server import MockUpstream, open_mock_upstream

__all__ = ["MockUpstream", "RecordedRequest", "Script", "ScriptError", "load_script", "open_mock_upstream", "parse_script"]
