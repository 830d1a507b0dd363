"""The kernel interfaces over ctypes, each checked by what the kernel then refuses:
Landlock (filesystem, TCP, scoping), the seccomp socket filter, and the namespaces."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from echsd.tools.sandbox import landlock
from tests.sandbox.kernel_helpers import require_landlock, run_snippet, tcp_server


def test_abi_version_is_what_the_kernel_reports() -> None:
    abi = landlock.abi_version()
    assert abi >= 0
    if Path("/sys/kernel/security/lsm").exists() and "landlock" in Path("/sys/kernel/security/lsm").read_text():
        assert abi >= 1


def test_a_ruleset_handles_only_what_its_abi_knows() -> None:
    assert landlock.fs_rights(1) == (1 << 13) - 1
    assert landlock.fs_rights(3) & landlock.TRUNCATE
    assert not landlock.fs_rights(4) & landlock.IOCTL_DEV
    assert landlock.fs_rights(7) & landlock.IOCTL_DEV


def test_landlock_confines_writes_to_the_rules_paths(tmp_path: Path) -> None:
    abi = require_landlock()
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    (outside / "existing").write_text("before")
    report = run_snippet(
        """
abi, inside, outside = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ruleset = landlock.Ruleset(abi, fs=landlock.fs_rights(abi))
ruleset.allow_path("/", landlock.READ)
ruleset.allow_path(inside, landlock.fs_rights(abi))
libc.set_no_new_privs()
ruleset.restrict_self()
print(json.dumps({
    "inside": attempt(lambda: write(inside + "/new")),
    "outside_new": attempt(lambda: write(outside + "/new")),
    "outside_existing": attempt(lambda: write(outside + "/existing")),
    "outside_read": attempt(lambda: open(outside + "/existing").read()),
    "outside_mkdir": attempt(lambda: os.mkdir(outside + "/dir")),
    "outside_unlink": attempt(lambda: os.unlink(outside + "/existing")),
    "child": os.system(f"echo x > {outside}/from_child") >> 8,
}))
""",
        abi,
        inside,
        outside,
    )
    assert report["inside"] == "ok" and (inside / "new").read_text() == "x"
    assert report["outside_new"] == report["outside_existing"] == report["outside_mkdir"] == report["outside_unlink"] == "EACCES"
    assert report["outside_read"] == "ok"
    assert report["child"] != 0
    assert sorted(p.name for p in outside.iterdir()) == ["existing"]
    assert (outside / "existing").read_text() == "before"


def test_a_rule_on_a_file_grants_only_file_rights(tmp_path: Path) -> None:
    abi = require_landlock(3)
    target = tmp_path / "file"
    target.write_text("old")
    report = run_snippet(
        """
abi, target = int(sys.argv[1]), sys.argv[2]
ruleset = landlock.Ruleset(abi, fs=landlock.fs_rights(abi))
ruleset.allow_path("/", landlock.READ)
ruleset.allow_path(target, landlock.fs_rights(abi))  # directory rights are masked away
libc.set_no_new_privs()
ruleset.restrict_self()
print(json.dumps({"truncate": attempt(lambda: write(target)), "sibling": attempt(lambda: write(target + ".new"))}))
""",
        abi,
        target,
    )
    assert report == {"truncate": "ok", "sibling": "EACCES"}
    assert target.read_text() == "x"


def test_landlock_tcp_rules_allow_only_the_ports_given() -> None:
    abi = require_landlock(4)
    with tcp_server() as allowed, tcp_server() as refused:
        report = run_snippet(
            """
abi, allowed, refused = map(int, sys.argv[1:4])
ruleset = landlock.Ruleset(abi, fs=0, net=landlock.BIND_TCP | landlock.CONNECT_TCP)
ruleset.allow_port(allowed, landlock.CONNECT_TCP)
libc.set_no_new_privs()
ruleset.restrict_self()
print(json.dumps({"allowed": attempt(lambda: connect(allowed)), "refused": attempt(lambda: connect(refused))}))
""",
            abi,
            allowed,
            refused,
        )
    assert report == {"allowed": "ok", "refused": "EACCES"}


def test_landlock_scoping_keeps_signals_inside_the_domain() -> None:
    abi = require_landlock(6)
    report = run_snippet(
        """
abi = int(sys.argv[1])
ruleset = landlock.Ruleset(abi, fs=0, scoped=landlock.SCOPE_SIGNAL)
libc.set_no_new_privs()
ruleset.restrict_self()
child = os.fork()
if child == 0:
    os.pause()
import signal
print(json.dumps({"parent": attempt(lambda: os.kill(os.getppid(), 0)), "own_child": attempt(lambda: os.kill(child, signal.SIGKILL))}))
""",
        abi,
    )
    assert report == {"parent": "EPERM", "own_child": "ok"}


def test_root_restricts_itself_without_no_new_privs() -> None:
    abi = require_landlock()
    if os.geteuid() != 0:
        pytest.skip("without privilege, landlock_restrict_self needs no_new_privs")
    report = run_snippet(
        """
abi = int(sys.argv[1])
ruleset = landlock.Ruleset(abi, fs=landlock.WRITE_FILE)
ruleset.restrict_self()
print(json.dumps({"write": attempt(lambda: write("/dev/null")), "closed": ruleset.fd}))
""",
        abi,
    )
    assert report == {"write": "EACCES", "closed": -1}


def test_seccomp_filter_refuses_every_socket_family_but_unix() -> None:
    report = run_snippet(
        """
libc.set_no_new_privs()
seccomp.install_socket_filter()
print(json.dumps({
    "inet": attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()),
    "inet6_udp": attempt(lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).close()),
    "unix": attempt(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()),
    "pair": attempt(lambda: [s.close() for s in socket.socketpair()]),
    "child_inet": os.system("python3 -c 'import socket; socket.socket()' 2>/dev/null") >> 8,
}))
"""
    )
    assert report["inet"] == report["inet6_udp"] == "EPERM"
    assert report["unix"] == report["pair"] == "ok"
    assert report["child_inet"] != 0


def test_a_network_namespace_reaches_nothing_outside_but_has_loopback() -> None:
    with tcp_server() as port:
        report = run_snippet(
            """
namespaces.enter(network=False)
local = socket.create_server(("127.0.0.1", 0))
own = local.getsockname()[1]
print(json.dumps({
    "outside": attempt(lambda: connect(int(sys.argv[1]))),
    "own_loopback": attempt(lambda: connect(own)),
    "uid": os.getuid(),
}))
""",
            port,
        )
    assert report["outside"] == "ECONNREFUSED"  # the test's server is in another namespace
    assert report["own_loopback"] == "ok"
    assert report["uid"] == os.getuid()


def test_mounts_pin_protect_and_hide(tmp_path: Path) -> None:
    pinned, protected, hidden_dir = tmp_path / "pinned", tmp_path / "protected", tmp_path / "hidden"
    for directory in (pinned, protected, hidden_dir):
        directory.mkdir()
    (protected / "hook").write_text("original")
    (hidden_dir / "secret").write_text("token")
    secret_file = tmp_path / "secret-file"
    secret_file.write_text("token")
    report = run_snippet(
        """
pinned, protected, hidden_dir, secret_file = sys.argv[1:5]
namespaces.enter(network=True)
namespaces.pin(pinned)
namespaces.bind_readonly(protected)
namespaces.hide(hidden_dir)
namespaces.hide(secret_file)
print(json.dumps({
    "rename_pinned": attempt(lambda: os.rename(pinned, pinned + ".moved")),
    "write_in_pinned": attempt(lambda: write(pinned + "/file")),
    "write_protected": attempt(lambda: write(protected + "/hook")),
    "new_in_protected": attempt(lambda: write(protected + "/new")),
    "hidden_listing": os.listdir(hidden_dir),
    "hidden_file": open(secret_file).read(),
}))
""",
        pinned,
        protected,
        hidden_dir,
        secret_file,
    )
    assert report["rename_pinned"] == "EBUSY"
    assert report["write_in_pinned"] == "ok" and (pinned / "file").exists()
    assert report["write_protected"] == report["new_in_protected"] == "EROFS"
    assert (protected / "hook").read_text() == "original" and not (protected / "new").exists()
    assert report["hidden_listing"] == [] and report["hidden_file"] == ""
    assert (hidden_dir / "secret").read_text() == "token"  # untouched outside the namespace


@pytest.mark.parametrize("code", ["libc.unshare(0x7FFFFFFF)", "libc.mount(None, '/nonexistent-x', None, 0)"])
def test_failures_raise_oserror_naming_the_call(code: str) -> None:
    report = run_snippet(
        f"""
try:
    {code}
    print(json.dumps({{"raised": None}}))
except OSError as exc:
    print(json.dumps({{"raised": str(exc), "errno": exc.errno}}))
"""
    )
    assert report["raised"] and report["errno"]
