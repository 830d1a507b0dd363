"""The wire protocol (CONTRACT.md 3): the daemon's WebSocket server and the client library.

Client side (cheap to import, no daemon code): ``client`` (``connect``, ``Client``),
``stream`` (``EventStream``), ``discovery``, ``errors``. Sans-IO cores: ``codec`` (frames),
``schema`` (every op, from which validation, dispatch, the client's methods and
``docs/protocol.md`` come), ``handshake``, ``outbox`` (per-connection queue and backpressure
gaps), ``follow`` (replay/live seam). Server side: ``listeners``, ``server``, ``session``,
``subscriptions``, ``token``. This package imports nothing on its own, so importing the client stays light.
"""
