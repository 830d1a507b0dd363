"""The sandbox through the real tool loop: ``echsd serve`` (its built-in mock model issuing
``exec_command`` and ``apply_patch`` calls), threads made with ``echs new --sandbox
--network``, outputs read back with ``echs history``. Every refusal here is the kernel's
(everything runs as root, which file modes do not stop): each test checks that the file
was not written or the connection not opened, not only what the command printed."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from echsd.tools.sandbox import landlock
from tests.cli.helpers import Serve, echs, new_thread
from tests.sandbox.kernel_helpers import tcp_server

if landlock.abi_version() < 1:
    pytest.skip("these tests need Landlock", allow_module_level=True)

SETSID = "setsid sh -c 'echo setsid > {path}; echo $? > {report}' & wait; sleep 0.2"
DOUBLE_FORK = (
    "python3 -c 'import os, sys\nif os.fork(): os.wait(); sys.exit()\nos.setsid()\n"
    "if os.fork(): sys.exit()\nos.system(\"echo grandchild > {path}; echo $? > {report}\")'; "
    "for i in $(seq 100); do [ -s {report} ] && break; sleep 0.02; done"
)
CONNECT = "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), timeout=5); print(\"connected\")'"


def run_calls(serve: Serve, thread_id: str, calls: list[dict[str, Any]]) -> list[str]:
    """Have the model make ``calls`` one after the other; their outputs, in order."""
    steps = [{"calls": [call]} for call in calls] + [{"text": "done"}]
    sent = echs(serve.state_dir, "send", thread_id, "mock: " + json.dumps({"steps": steps}), "--wait", "--json")
    assert sent.returncode == 0, sent.stderr
    history = json.loads(echs(serve.state_dir, "history", thread_id, "--json").stdout)
    outputs = [item["output"] for item in history if item["type"] == "function_call_output"]
    return outputs[-len(calls) :]


def shell(cmd: str) -> dict[str, Any]:
    return {"name": "exec_command", "arguments": {"cmd": cmd, "yield_time_ms": 20000}}


def thread(serve: Serve, cwd: Path, *flags: str) -> str:
    return new_thread(serve.state_dir, "--cwd", str(cwd), *flags)


def test_workspace_write_network_off_confines_writes_and_network(serve: Serve, dirs: dict[str, Path]) -> None:
    cwd, sibling = dirs["cwd"], dirs["sibling"]
    tid = thread(serve, cwd, "--sandbox", "workspace-write", "--network", "off")
    shown = json.loads(echs(serve.state_dir, "show", tid, "--json").stdout)["config"]
    assert (shown["sandbox"], shown["network"]) == ("workspace-write", "off")
    home = serve.state_dir.parent / "home"
    name = f"echsd-sandbox-{uuid.uuid4().hex[:8]}"
    outside = {"sibling": sibling / name, "home": home / name, "etc": Path("/etc") / name}
    with tcp_server() as port:
        outputs = run_calls(
            serve,
            tid,
            [
                shell('echo in > inside.txt && echo tmp > "$TMPDIR/t.txt" && cat inside.txt "$TMPDIR/t.txt" && echo "TMPDIR=$TMPDIR"'),
                *(shell(f"echo no > {path}") for path in outside.values()),
                shell('echo no > "$HOME/' + name + '.viahome"'),
                shell(SETSID.format(path=sibling / "setsid", report=cwd / "setsid-status")),
                shell(DOUBLE_FORK.format(path=sibling / "grandchild", report=cwd / "grandchild-status")),
                shell(CONNECT.format(port=port)),
            ],
        )
    inside, *denied, via_home, _setsid, _grandchild, connect = outputs
    assert "Process exited with code 0" in inside and (cwd / "inside.txt").read_text() == "in\n"
    tmpdir = next(line.split("=", 1)[1] for line in inside.splitlines() if line.startswith("TMPDIR="))
    assert Path(tmpdir, "t.txt").read_text() == "tmp\n" and tid in tmpdir
    for output in (*denied, via_home):
        assert "Permission denied" in output, output
        assert "require_escalated" in output  # the model is told how to ask
    assert not any(path.exists() for path in outside.values()) and not (home / f"{name}.viahome").exists()
    for escape in ("setsid", "grandchild"):
        assert (cwd / f"{escape}-status").read_text().strip() not in ("", "0")  # the write failed in the escaped process
        assert not (sibling / escape).exists()
    assert "connected" not in connect.split("Output:")[-1] and "Connection refused" in connect


def test_network_on_reaches_a_local_server(serve: Serve, dirs: dict[str, Path]) -> None:
    tid = thread(serve, dirs["cwd"], "--sandbox", "workspace-write", "--network", "on")
    with tcp_server() as port:
        (output,) = run_calls(serve, tid, [shell(CONNECT.format(port=port))])
    assert "Process exited with code 0" in output and output.rstrip().endswith("connected")


def test_read_only_writes_nothing_at_all(serve: Serve, dirs: dict[str, Path]) -> None:
    tid = thread(serve, dirs["cwd"], "--sandbox", "read-only")
    *outputs, where = run_calls(
        serve, tid, [shell("echo a > inside"), shell('echo b > "$TMPDIR/t"'), shell("mkdir sub"), shell('echo "TMPDIR=$TMPDIR"')]
    )
    assert all("Permission denied" in output and "Process exited with code 0" not in output for output in outputs), outputs
    assert list(dirs["cwd"].iterdir()) == []
    tmpdir = where.rstrip().rsplit("TMPDIR=", 1)[1]
    assert tid in tmpdir and not Path(tmpdir, "t").exists()


def test_full_access_writes_and_connects_anywhere(serve: Serve, dirs: dict[str, Path]) -> None:
    tid = thread(serve, dirs["cwd"], "--sandbox", "full-access")
    assert json.loads(echs(serve.state_dir, "show", tid, "--json").stdout)["config"]["network"] == "on"
    name = f"echsd-sandbox-{uuid.uuid4().hex[:8]}"
    written = [dirs["sibling"] / "written", serve.state_dir.parent / "home" / name, Path("/etc") / name]
    try:
        with tcp_server() as port:
            outputs = run_calls(serve, tid, [*(shell(f"echo yes > {path}") for path in written), shell(CONNECT.format(port=port))])
        assert all("Process exited with code 0" in output for output in outputs), outputs
        assert all(path.read_text() == "yes\n" for path in written)
    finally:
        for path in written:
            path.unlink(missing_ok=True)


def test_apply_patch_outside_the_roots_is_refused_and_changes_nothing(serve: Serve, dirs: dict[str, Path]) -> None:
    cwd, sibling = dirs["cwd"], dirs["sibling"]
    (sibling / "kept.txt").write_text("original\n")
    tid = thread(serve, cwd)
    escaping = (
        "*** Begin Patch\n*** Add File: inside.txt\n+inside\n"
        f"*** Update File: {sibling / 'kept.txt'}\n@@\n-original\n+changed\n*** End Patch\n"
    )
    allowed = "*** Begin Patch\n*** Add File: ok.txt\n+fine\n*** End Patch\n"
    refused, applied, via_shell = run_calls(
        serve,
        tid,
        [
            {"name": "apply_patch", "arguments": {"input": escaping}},
            {"name": "apply_patch", "arguments": {"input": allowed}},
            shell(f"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: {sibling / 'new.txt'}\n+x\n*** End Patch\nEOF"),
        ],
    )
    assert "sandbox (workspace-write: only" in refused and str(sibling / "kept.txt") in refused and "No file was changed" in refused
    assert (sibling / "kept.txt").read_text() == "original\n" and not (cwd / "inside.txt").exists()
    assert "ok.txt" in applied and (cwd / "ok.txt").read_text() == "fine\n"
    assert "No file was changed" in via_shell and not (sibling / "new.txt").exists()


def test_the_file_tools_read_nothing_the_sandbox_hides(serve: Serve, dirs: dict[str, Path]) -> None:
    """The daemon's state directory (with its token) is hidden from a confined thread's
    commands, and its file tools honour the same policy: no read, listing or search reaches
    it, not through a symlink either; a full-access thread reads it as its commands could."""
    cwd, state = dirs["cwd"], serve.state_dir
    token = (state / "token").read_text().strip()
    (cwd / "link").symlink_to(state / "token")
    (cwd / "statelink").symlink_to(state)
    reads = [
        shell(f"cat {state / 'token'}"),
        {"name": "read_file", "arguments": {"file_path": str(state / "token")}},
        {"name": "read_file", "arguments": {"file_path": "link"}},
        {"name": "view_image", "arguments": {"path": str(state / "token")}},
        {"name": "list_dir", "arguments": {"dir_path": str(state)}},
        {"name": "list_dir", "arguments": {"dir_path": "statelink"}},
        {"name": "grep_files", "arguments": {"pattern": token[:12], "path": str(state)}},
        {"name": "grep_files", "arguments": {"pattern": token[:12], "path": str(state.parent)}},
    ]
    confined = run_calls(serve, thread(serve, cwd), reads)
    assert all(token not in output for output in confined), confined
    command, *tools = confined
    assert "Process exited with code 0" not in command and "No such file" in command, command
    for output in tools[:6]:
        assert "the daemon's own" in output and "sandbox hides" in output, output
    assert tools[6] == "No matches found.", tools[6]
    unconfined = run_calls(serve, thread(serve, cwd, "--sandbox", "full-access"), [reads[1], reads[6]])
    assert token in unconfined[0] and str(state / "token") in unconfined[1], unconfined


def test_changing_the_sandbox_alone_takes_the_default_network_along(serve: Serve, dirs: dict[str, Path]) -> None:
    """``echs config ID sandbox=full-access`` on a thread with the default network means no
    sandbox (as ``echs new --sandbox full-access`` does), and back to workspace-write the
    network is off again; a network someone chose stays as chosen."""

    def network_after(tid: str, *changes: str) -> str:
        changed = echs(serve.state_dir, "config", tid, *changes, "--json")
        assert changed.returncode == 0, changed.stderr
        return str(json.loads(changed.stdout)["config"]["network"])

    tid = thread(serve, dirs["cwd"])
    with tcp_server() as port:
        assert network_after(tid, "sandbox=full-access") == "on"
        (opened,) = run_calls(serve, tid, [shell(CONNECT.format(port=port))])
        assert network_after(tid, "sandbox=workspace-write") == "off"
        (refused,) = run_calls(serve, tid, [shell(CONNECT.format(port=port))])
    assert opened.rstrip().endswith("connected") and "Connection refused" in refused, (opened, refused)
    chosen = thread(serve, dirs["cwd"], "--network", "on")
    assert network_after(chosen, "sandbox=read-only") == "on"
    assert network_after(chosen, "sandbox=full-access", "network=off") == "off"
    assert network_after(chosen, "sandbox=workspace-write") == "off"


def test_a_worktree_threads_file_tools_read_its_worktree_under_the_hidden_state_dir(serve: Serve, dirs: dict[str, Path]) -> None:
    """A worktree thread's cwd lies in the daemon's state directory, which its sandbox hides:
    its file tools see the worktree as its commands do, and nothing else of the state."""
    repo = dirs["cwd"]
    for args in (["init", "-q", "-b", "main"], ["add", "notes.txt"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first"]):
        if args[0] == "add":
            (repo / "notes.txt").write_text("needle in the worktree\n")
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    made = echs(serve.state_dir, "new", "--cwd", str(repo), "--worktree", "--json")
    assert made.returncode == 0, made.stderr
    tid, tree = json.loads(made.stdout)["thread_id"], Path(json.loads(made.stdout)["worktree"]["path"])
    assert tree.is_relative_to(serve.state_dir)
    token = (serve.state_dir / "token").read_text().strip()
    outputs = run_calls(
        serve,
        tid,
        [
            shell("cat notes.txt"),
            {"name": "read_file", "arguments": {"file_path": "notes.txt"}},
            {"name": "list_dir", "arguments": {"dir_path": str(tree)}},
            {"name": "grep_files", "arguments": {"pattern": "needle", "path": str(tree)}},
            {"name": "read_file", "arguments": {"file_path": str(serve.state_dir / "token")}},
            {"name": "grep_files", "arguments": {"pattern": token[:12], "path": str(serve.state_dir.parent)}},
        ],
    )
    command, read, listed, found, token_read, token_search = outputs
    assert "needle in the worktree" in command and "needle in the worktree" in read, outputs
    assert "notes.txt" in listed and str(tree / "notes.txt") in found, outputs
    assert "the daemon's own" in token_read and token not in token_read, token_read
    assert token_search == "No matches found.", token_search
    assert echs(serve.state_dir, "rm", tid).returncode == 0
