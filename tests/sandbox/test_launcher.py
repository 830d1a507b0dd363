"""Commands confined through the fork server, judged by what the kernel let happen: files
written or not, connections opened or not, also from processes that left the command's
session. Everything runs as root here, so every refusal below is the kernel's."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from echsd.tools.sandbox.runtime import SandboxRuntime
from tests.sandbox.helpers import Confined, confined_tool
from tests.sandbox.kernel_helpers import tcp_server

# Processes that leave the command's session before they write.
SETSID_WRITE = "setsid sh -c 'echo setsid > {path}; echo $? > {report}' & wait; sleep 0.2"
DOUBLE_FORK_WRITE = (
    "python3 -c 'import os, sys\nif os.fork(): os.wait(); sys.exit()\nos.setsid()\n"
    "if os.fork(): sys.exit()\nos.system(\"echo grandchild > {path}; echo $? > {report}\")'; "
    "for i in $(seq 100); do [ -s {report} ] && break; sleep 0.02; done"
)


async def test_workspace_write_writes_inside_cwd_and_tmpdir(confined: Confined, dirs: dict[str, Path]) -> None:
    policy = confined.policy(dirs["cwd"])
    ran = await confined.run(policy, 'echo in > inside.txt && echo tmp > "$TMPDIR/t.txt" && cat inside.txt "$TMPDIR/t.txt" && echo $TMPDIR')
    assert ran.code == 0, ran.report
    assert (dirs["cwd"] / "inside.txt").read_text() == "in\n"
    assert policy.tmpdir is not None and ran.output.splitlines()[-1] == policy.tmpdir
    assert Path(policy.tmpdir, "t.txt").read_text() == "tmp\n"


@pytest.mark.parametrize("target", ["sibling", "home", "etc"])
async def test_workspace_write_refuses_writes_outside(confined: Confined, dirs: dict[str, Path], target: str) -> None:
    name = f"echsd-sandbox-test-{uuid.uuid4().hex[:8]}"
    path = {"etc": Path("/etc") / name, "home": Path.home() / name, "sibling": dirs["sibling"] / name}[target]
    ran = await confined.run(confined.policy(dirs["cwd"]), f"echo no > {path}")
    assert ran.code != 0
    assert "Permission denied" in ran.output
    assert not path.exists()
    assert "sandbox" in ran.report and "require_escalated" in ran.report  # the note for the model


@pytest.mark.parametrize("escape", [SETSID_WRITE, DOUBLE_FORK_WRITE], ids=["setsid", "double-fork"])
async def test_processes_that_leave_the_session_stay_confined(confined: Confined, dirs: dict[str, Path], escape: str) -> None:
    path, report = dirs["sibling"] / "escaped", dirs["cwd"] / "status"
    ran = await confined.run(confined.policy(dirs["cwd"]), escape.format(path=path, report=report))
    assert report.read_text().strip() not in ("", "0"), ran.report  # the escaped write failed...
    assert not path.exists()  # ...and left nothing


async def test_network_off_cannot_reach_a_local_server_and_on_can(confined: Confined, dirs: dict[str, Path]) -> None:
    connect = "python3 -c 'import socket, sys; socket.create_connection((\"127.0.0.1\", int(sys.argv[1])), timeout=5); print(\"connected\")' {port}"
    with tcp_server() as port:
        off = await confined.run(confined.policy(dirs["cwd"]), connect.format(port=port))
        on = await confined.run(confined.policy(dirs["cwd"], network=True), connect.format(port=port))
    assert off.code != 0 and "connected" not in off.output and "Connection refused" in off.output
    assert on.code == 0 and on.output.strip() == "connected"
    assert "require_escalated" in off.report and "require_escalated" not in on.report  # the note for the model


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
async def test_curl_refused_by_the_network_off_sandbox_is_told_how_to_ask(confined: Confined, dirs: dict[str, Path]) -> None:
    with tcp_server() as port:
        ran = await confined.run(confined.policy(dirs["cwd"]), f"curl -sS -m 5 http://127.0.0.1:{port}/")
    assert ran.code not in (None, 0) and "require_escalated" in ran.report, ran.report


async def test_read_only_writes_nothing_at_all(confined: Confined, dirs: dict[str, Path]) -> None:
    policy = confined.policy(dirs["cwd"], "read-only")
    ran = await confined.run(policy, 'echo a > inside; echo b > "$TMPDIR/t"; mkdir d; echo ok > /dev/null && echo devnull-ok')
    assert ran.output.count("Permission denied") >= 2 and "devnull-ok" in ran.output
    assert list(dirs["cwd"].iterdir()) == []
    assert not Path(str(policy.tmpdir), "t").exists()


async def test_full_access_is_not_confined(confined: Confined, dirs: dict[str, Path]) -> None:
    with tcp_server() as port:
        ran = await confined.run(
            confined.policy(dirs["cwd"], "full-access", network=True),
            f"echo yes > {dirs['sibling']}/written && python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}))'",
        )
    assert ran.code == 0, ran.report
    assert (dirs["sibling"] / "written").read_text() == "yes\n"


async def test_full_access_with_network_off_confines_only_the_network(confined: Confined, dirs: dict[str, Path]) -> None:
    with tcp_server() as port:
        ran = await confined.run(
            confined.policy(dirs["cwd"], "full-access"),
            f"echo yes > {dirs['sibling']}/written; python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}))'",
        )
    assert ran.code != 0 and "Connection refused" in ran.output
    assert (dirs["sibling"] / "written").read_text() == "yes\n"


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


async def test_git_commits_work_but_hooks_and_config_are_protected(confined: Confined, dirs: dict[str, Path]) -> None:
    repo = dirs["cwd"]
    git(repo, "init", "-q")
    hooks = repo / ".git" / "hooks"
    if hooks.exists():
        shutil.rmtree(hooks)  # a repository without hooks: the sandbox still protects the place
    config_before = (repo / ".git" / "config").read_text()
    ran = await confined.run(
        confined.policy(repo),
        "echo hi > f && git add f && git -c user.name=a -c user.email=a@a commit -qm one && echo committed; "
        "echo 'touch pwned' > .git/hooks/pre-commit; echo '[core] hooksPath = /tmp' >> .git/config; "
        "mv .git .git-old; mkdir -p sub/.git",
    )
    assert "committed" in ran.output, ran.report
    assert git(repo, "log", "--format=%s").stdout.strip() == "one"
    assert not (hooks / "pre-commit").exists()
    assert (repo / ".git" / "config").read_text() == config_before
    assert (repo / ".git").is_dir() and not (repo / ".git-old").exists()
    assert "Read-only file system" in ran.output


async def test_a_submodules_and_other_worktrees_hooks_and_config_are_protected_too(confined: Confined, dirs: dict[str, Path]) -> None:
    repo, source, other = dirs["cwd"], dirs["sibling"] / "lib", dirs["sibling"] / "other-tree"
    source.mkdir()
    for where in (source, repo):
        git(where, "init", "-q")
        git(where, "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-q", "--allow-empty", "-m", "first")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(source), "lib")
    git(repo, "worktree", "add", "-q", str(other))
    module = repo / ".git" / "modules" / "lib"
    tree_config = repo / ".git" / "worktrees" / "other-tree" / "config.worktree"
    tree_config.write_text("[core]\n")
    shutil.rmtree(module / "hooks")  # protected also where git made none
    before = {path: path.read_text() for path in (module / "config", tree_config)}
    ran = await confined.run(
        confined.policy(repo),
        "cd lib && echo hi > f && git add f && git -c user.name=a -c user.email=a@a commit -qm two && echo committed; cd ..; "
        "echo 'touch pwned' > .git/modules/lib/hooks/post-checkout; echo '[core] fsmonitor = touch pwned' >> .git/modules/lib/config; "
        "echo '[core] fsmonitor = touch pwned' >> .git/worktrees/other-tree/config.worktree",
    )
    assert "committed" in ran.output, ran.report
    assert git(repo / "lib", "log", "-1", "--format=%s").stdout.strip() == "two"  # its objects and refs are writable
    assert not (module / "hooks" / "post-checkout").exists()
    assert {path: path.read_text() for path in before} == before
    assert ran.output.count("Read-only file system") == 3, ran.output


async def test_the_daemons_state_directory_is_hidden(confined: Confined, dirs: dict[str, Path], tmp_path: Path) -> None:
    ran = await confined.run(confined.policy(dirs["cwd"], "full-access", network=False), f"ls -A {tmp_path / 'state'}; cat {tmp_path / 'state' / 'token'}")
    assert "secret" not in ran.output


async def test_a_tty_command_is_confined_and_has_its_terminal(confined: Confined, dirs: dict[str, Path]) -> None:
    ran = await confined.run(
        confined.policy(dirs["cwd"]), f"tty -s && echo is-a-tty; echo to-tty > /dev/tty; echo no > {dirs['sibling']}/x", tty=True
    )
    assert "is-a-tty" in ran.output and "to-tty" in ran.output
    assert not (dirs["sibling"] / "x").exists()


async def test_a_command_that_cannot_start_says_why(confined: Confined, dirs: dict[str, Path]) -> None:
    from echsd.tools.base import ToolError

    with pytest.raises(ToolError, match="cannot start the command"):
        await confined.run(confined.policy(dirs["sibling"] / "gone"), "true")


async def test_pid_namespace_containment_confines_too(confined: Confined, dirs: dict[str, Path]) -> None:
    tool = confined_tool(confined.runtime, "pidns")
    ran = await Confined(confined.runtime, tool).run(confined.policy(dirs["cwd"]), f"echo $$; echo no > {dirs['sibling']}/x; echo yes > inside")
    assert ran.output.splitlines()[0] == "1"
    assert not (dirs["sibling"] / "x").exists()
    assert (dirs["cwd"] / "inside").read_text() == "yes\n"


async def test_without_user_namespaces_landlock_and_seccomp_still_confine(tmp_path: Path, dirs: dict[str, Path]) -> None:
    runtime = SandboxRuntime(disabled=["userns"], tmp_root=str(tmp_path))
    try:
        support = await runtime.start()
        assert not support.namespaces and support.landlock_abi
        assert support.to_status("refuse")["network"].startswith("seccomp")
        assert support.limits()
        runner = Confined(runtime, confined_tool(runtime))
        with tcp_server() as port:
            ran = await runner.run(
                runner.policy(dirs["cwd"]),
                f"echo no > {dirs['sibling']}/x; echo yes > inside; python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}))'",
            )
        assert not (dirs["sibling"] / "x").exists() and (dirs["cwd"] / "inside").exists()
        assert "Operation not permitted" in ran.output  # the socket filter
    finally:
        await runtime.aclose()


async def test_without_landlock_a_confined_policy_is_refused_unless_the_fallback_says(tmp_path: Path, dirs: dict[str, Path]) -> None:
    from echsd.tools.base import ToolError

    for fallback in ("refuse", "unconfined"):
        runtime = SandboxRuntime(disabled=["landlock"], fallback=fallback, tmp_root=str(tmp_path))
        try:
            runner = Confined(runtime, confined_tool(runtime))
            command = f"echo written > {dirs['sibling']}/{fallback}"
            if fallback == "refuse":
                with pytest.raises(ToolError, match="needs Landlock"):
                    await runner.run(runner.policy(dirs["cwd"]), command)
                assert not (dirs["sibling"] / fallback).exists()
            else:
                ran = await runner.run(runner.policy(dirs["cwd"]), command)
                assert "ran without the sandbox" in ran.report
                assert (dirs["sibling"] / fallback).exists()
        finally:
            await runtime.aclose()


async def test_a_confined_command_runs_on_as_a_session_with_its_output_streamed(confined: Confined, dirs: dict[str, Path]) -> None:
    """The spawn returns at the exec, not at the exit: output arrives while the command runs."""
    ran = await confined.run(confined.policy(dirs["cwd"]), "echo ready; sleep 30", yield_time_ms=500)
    assert ran.code is None and "Process running with session ID" in ran.report, ran.report
    assert ran.output == "ready\n"
    await confined.tool.sessions_of(None).close("test over")  # type: ignore[arg-type]
