"""The Codex app-server protocol listener (``echsd serve --app-server URL``).

A translator between OpenAI's Codex app-server protocol (as the Codex TUI speaks it:
``codex --remote ws://HOST:PORT`` or ``unix://PATH``) and echsd's router, event hub and
settings. It owns no thread state: every request becomes echsd ops run by the router (the
native wire's definitions and limits, on whichever node runs the thread), and everything
it shows comes from the event log and the hub.

Modules: ``server`` (listeners, handshake), ``handshake`` (the checks, sans-IO),
``connection`` (one client: frames in, outbox out, approvals asked), ``framing`` (the
JSON-RPC-like messages, sans-IO), ``methods`` / ``thread_methods`` / ``turn_methods``
(the method table), ``feed`` (one thread's events for one connection), ``translate``
(events -> notifications, sans-IO), ``items`` and ``shapes`` (echsd records in the
protocol's shapes), ``history`` (paging a thread's past), ``ids`` (thread UUIDs),
``outbox`` (a connection's bounded backlog), ``stored`` (reading the event log).
"""

