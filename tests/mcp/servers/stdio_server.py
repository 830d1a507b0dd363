"""The demo MCP server over stdio: ``python tests/mcp/servers/stdio_server.py``.

Configure it for echsd in ``<state>/config.toml``::

    [mcp_servers.demo]
    command = "python3"
    args = ["/path/to/echsd/tests/mcp/servers/stdio_server.py"]
"""

from __future__ import annotations

import sys

import trio

from demo_tools import build


def main() -> None:
    print("demo server starting", file=sys.stderr, flush=True)  # the daemon logs this at debug
    trio.run(build().run_stdio_async)


if __name__ == "__main__":
    main()
