"""MCP's other way: echsd as an MCP server, so MCP clients (Codex, Claude Code, editors) can
hand its agents work. ``tools.py`` defines the tools, ``backend.py`` carries them out as a
client of the running daemon (over the wire, like ``echs``); ``echsd mcp`` serves them over
stdio, ``echsd serve --mcp URL`` over streamable HTTP inside the daemon (``http.py``).
"""
