"""MCP both ways. The client side: the daemon's MCP servers (``[mcp_servers.NAME]`` in
config.toml), supervised and shared by the threads that use them, their tools offered to
the model as ``mcp__<server>__<tool>`` (``servers.py`` and what it uses).

Built on the official SDK (``mcp``), which is written on anyio and so runs on trio's
backend inside the daemon's own loop (anyio detects the running trio loop).
"""
