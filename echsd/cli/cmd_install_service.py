"""``echsd install-service --user [--no-enable]``: write the systemd user unit and enable it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

import click

SYSTEMCTL_TIMEOUT_S = 60


def _fail(message: str) -> NoReturn:
    click.echo(f"echsd: {message}", err=True)
    raise SystemExit(1)


def current_echsd() -> str:
    """The absolute path of the echsd being run (the unit must start this very one)."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "echsd" and argv0.is_file():
        return str(argv0.absolute())
    sibling = Path(sys.executable).parent / "echsd"  # the console script beside the venv's python
    if sibling.is_file():
        return str(sibling)
    found = shutil.which("echsd")
    if found is None:
        _fail("cannot find the echsd executable to put in the unit")
    return str(Path(found).absolute())


def unit_dir() -> Path:
    config_home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config_home) / "systemd" / "user"


def _systemctl(systemctl: str, *args: str) -> None:
    command = [systemctl, "--user", *args]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=SYSTEMCTL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        _fail(f"`systemctl --user {' '.join(args)}` did not run: {exc} (the unit is written; enable it by hand)")
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines()
        reason = lines[-1] if lines else f"exit status {result.returncode}"
        _fail(f"`systemctl --user {' '.join(args)}` failed: {reason} (the unit is written; is a systemd user session running?)")


@click.command("install-service")
@click.option("--user", is_flag=True, help="Install a systemd user unit (the only kind supported).")
@click.option("--no-enable", is_flag=True, help="Only write the unit file; do not run systemctl.")
@click.option(
    "--path/--no-path",
    "keep_path",
    default=True,
    show_default=True,
    help="Record this shell's PATH in the unit, so tools find what you find.",
)
def install_service(user: bool, no_enable: bool, keep_path: bool) -> None:
    """Install and start the systemd user unit.

    Writes ~/.config/systemd/user/echsd.service, then daemon-reload and enable --now.
    """
    from echsd.service.unit import UNIT_NAME, render_unit

    if not user:
        raise click.UsageError("only user units are supported: echsd install-service --user")
    text = render_unit(current_echsd(), os.environ.get("PATH") if keep_path else None)
    directory = unit_dir()
    target = directory / UNIT_NAME
    try:
        directory.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{UNIT_NAME}.{os.getpid()}")
        temporary.write_text(text)
        os.replace(temporary, target)
    except OSError as exc:
        _fail(f"cannot write {target}: {exc.strerror}")
    click.echo(f"wrote {target}")
    if no_enable:
        click.echo("not enabled (--no-enable); to start it: systemctl --user daemon-reload && systemctl --user enable --now echsd")
        return
    systemctl = shutil.which("systemctl")
    if systemctl is None:
        _fail("systemctl not found: the unit is written but not enabled (use --no-enable to only write it)")
    _systemctl(systemctl, "daemon-reload")
    _systemctl(systemctl, "enable", "--now", UNIT_NAME)
    click.echo("enabled and started; status: systemctl --user status echsd; logs: journalctl --user -u echsd -f")
