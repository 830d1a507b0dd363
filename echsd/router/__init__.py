"""The router: every op a client (or a tool, or another node) asks for runs where it belongs.

- ``router``: ``ThreadRouter``, the one place that decides local worker, local node,
  given-up thread, another node or every node.
- ``node``: ``LocalNode`` (what node handlers use) and ``RemoteNodes`` (the cluster).
- ``handlers``: the table of node handlers, filled by ``reads``, ``tree``, ``daemon_ops``,
  ``mcp_ops``, ``web_ops`` and ``workspace_ops`` (imported here, so importing the router
  registers them all).
- ``local_client``: the client library's methods, in process (tests, embedding programs).
"""

from echsd.router import daemon_ops, mcp_ops, reads, tree, web_ops, workspace_ops
from echsd.router.node import LocalNode, RemoteNodes
from echsd.router.router import ThreadRouter

__all__ = ["LocalNode", "RemoteNodes", "ThreadRouter", "daemon_ops", "mcp_ops", "reads", "tree", "web_ops", "workspace_ops"]
