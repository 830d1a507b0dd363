"""The systemd user unit for ``echsd serve``: one template, rendered by
``echsd install-service`` with the absolute path of the running echsd; the shipped
``systemd/echsd.service`` is the same template rendered for ``~/.local/bin/echsd``
(a test keeps the two identical).

Hardening is chosen so that the agents' tools keep working: they read and write the
user's projects and caches under ``$HOME``, read (and refresh) ``~/.codex/auth.json``,
and run compilers, package managers and test suites. So the home directory stays
writable and nothing that tools commonly need is taken away; what is removed is the
ability to gain privileges or to write the rest of the system.
"""

from __future__ import annotations

UNIT_NAME = "echsd.service"
SHIPPED_EXEC = "%h/.local/bin/echsd"

TEMPLATE = """\
# echsd: runs coding agents in the background; `echs` talks to it.
# Installed by `echsd install-service --user` (which fills in ExecStart with the
# absolute path of the echsd it ran as); edit with `systemctl --user edit echsd`.
[Unit]
Description=echsd coding-agent daemon

[Service]
# echsd sends READY=1 once its socket accepts connections, WATCHDOG=1 every
# WatchdogSec/2 from its event loop, and STOPPING=1 when it begins to shut down.
Type=notify
NotifyAccess=main
ExecStart={exec_start} serve
{environment}# SIGTERM starts the graceful stop (running turns interrupted, state saved, < 10 s);
# mixed: only the daemon gets SIGTERM, so it can stop its tools itself;
# whatever is left after TimeoutStopSec gets SIGKILL.
KillMode=mixed
# The unit's cgroup is the daemon's to manage: every tool command runs in a cgroup of
# its own below it, so killing a command kills all it started, setsid and double forks
# included (`echs status` shows containment: cgroup).
Delegate=yes
TimeoutStopSec=15
WatchdogSec=30
Restart=on-failure
RestartSec=2
# Logs go to stderr (JSON lines off a terminal), i.e. the journal: journalctl --user -u echsd

# Hardening that keeps the agents' tools working:
# - no privilege gain: sudo/setuid binaries cannot elevate what a model runs;
NoNewPrivileges=yes
RestrictSUIDSGID=yes
LockPersonality=yes
RestrictRealtime=yes
# - the system is read-only, the home directory (projects, caches, ~/.codex/auth.json,
#   the state dir ~/.local/state/echsd) stays writable, and /tmp is private to the
#   daemon (tools get a working /tmp that is cleaned when the service stops).
#   In a user unit these need unprivileged user namespaces; if the service fails with
#   status 226/NAMESPACE, turn them off in a drop-in (`systemctl --user edit echsd`:
#   [Service] ProtectSystem=no, PrivateTmp=no).
ProtectSystem=strict
ReadWritePaths=%h
PrivateTmp=yes
# Not used, because tools need them: ProtectHome (projects live in $HOME),
# MemoryDenyWriteExecute (breaks JITs: node, java, pypy), RestrictNamespaces
# (breaks rootless containers and sandboxes), PrivateNetwork (the model API).

[Install]
WantedBy=default.target
"""


def _escape(value: str) -> str:
    """A value for a unit file: ``%`` starts a specifier, so it is doubled."""
    return value.replace("%", "%%")


def _quote(value: str) -> str:
    """Quoted for ExecStart/Environment when it contains spaces or quotes."""
    if any(c in value for c in " \t\"'\\"):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value


def render_unit(exec_path: str, path_env: str | None = None) -> str:
    """The unit text. ``path_env``: a PATH for the daemon and its tools (the manager's
    default PATH often lacks ~/.local/bin, pyenv, nvm, cargo...); None leaves it out."""
    environment = f"Environment={_quote('PATH=' + _escape(path_env))}\n" if path_env else ""
    return TEMPLATE.format(exec_start=_quote(exec_path if exec_path == SHIPPED_EXEC else _escape(exec_path)), environment=environment)
