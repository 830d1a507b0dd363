"""``echsd``: the daemon and its admin verbs (CONTRACT.md 1.1)."""

from __future__ import annotations

import click

from echsd import __version__
from echsd.cli.lazy import LazyGroup


@click.group(
    cls=LazyGroup,
    lazy_commands={
        "serve": "echsd.cli.cmd_serve:serve",
        "probe": "echsd.cli.cmd_probe:probe",
        "mock-upstream": "echsd.cli.cmd_mock_upstream:mock_upstream",
        "models": "echsd.cli.cmd_models:models",
        "token": "echsd.cli.cmd_token:token",
        "install-service": "echsd.cli.cmd_install_service:install_service",
        "vacuum": "echsd.cli.cmd_vacuum:vacuum",
        "mcp": "echsd.cli.cmd_mcp:mcp",
    },
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="echsd")
def cli() -> None:
    """echsd: runs coding agents in the background; clients attach over a local WebSocket."""


def main() -> None:
    cli()
if __name__ == "__main__":
    main()
