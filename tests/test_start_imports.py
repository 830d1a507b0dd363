"""What the daemon imports to start: nothing serving does not need then (its start time
is measured by ``make bench ARGS=restart``). Pillow comes with the first image, httpx with
the first compaction, token refresh or proxied request, psycopg with a PostgreSQL store,
the mock with the mock provider, the MCP SDK (a second to import) with MCP servers
configured or ``--mcp``, hypercorn with ``--mcp``."""

from __future__ import annotations

import json
import subprocess
import sys

LATER = ("PIL", "httpx", "psycopg", "echsd.codex.mock", "urllib.request", "mcp", "mcp_types", "hypercorn")


def test_starting_the_daemon_imports_only_what_serving_needs() -> None:
    code = f"import json, sys; import echsd.daemon, echsd.cli.echsd_main; print(json.dumps([m for m in {list(LATER)!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert json.loads(out.stdout) == []
