"""Spotting ``apply_patch <<'EOF'`` sent through exec_command, as Codex does (sans-IO)."""

from __future__ import annotations

import shlex

import pytest

from echsd.tools.apply_patch.shell import ShellPatch, recognise_shell_patch

PATCH = "*** Begin Patch\n*** Add File: foo\n+hi\n*** End Patch"


def heredoc(prefix: str = "", suffix: str = "", opener: str = "'PATCH'", closer: str = "PATCH") -> str:
    return f"{prefix}apply_patch <<{opener}\n{PATCH}\n{closer}{suffix}"


@pytest.mark.parametrize(
    ("cmd", "workdir"),
    [
        (heredoc(), None),
        (heredoc(suffix="\n"), None),
        (heredoc(opener="EOF", closer="EOF"), None),
        (heredoc(opener='"EOF"', closer="EOF"), None),
        (heredoc(prefix="  "), None),
        (heredoc().replace("apply_patch", "applypatch"), None),
        (heredoc("cd foo && "), "foo"),
        (heredoc("cd 'foo bar' && "), "foo bar"),
        (heredoc('cd "foo bar" && '), "foo bar"),
        ("bash -lc " + shlex.quote(heredoc("cd sub && ")), "sub"),
        ("/bin/bash -c " + shlex.quote(heredoc()), None),
        ("sh -c " + shlex.quote(heredoc()), None),
        ("apply_patch " + shlex.quote(PATCH), None),
    ],
)
def test_recognised(cmd: str, workdir: str | None) -> None:
    assert recognise_shell_patch(cmd) == ShellPatch(PATCH, workdir)


def test_dash_heredoc_strips_leading_tabs() -> None:
    cmd = "apply_patch <<-EOF\n\t*** Begin Patch\n\t*** Add File: foo\n\t+hi\n\t*** End Patch\n\tEOF"
    assert recognise_shell_patch(cmd) == ShellPatch(PATCH, None)


@pytest.mark.parametrize(
    "cmd",
    [
        heredoc("cd foo; "),
        heredoc("cd bar || "),
        heredoc("cd bar | "),
        heredoc("echo foo && "),
        heredoc("cd foo && cd bar && "),
        heredoc("cd foo bar && "),
        heredoc("echo foo; cd bar && "),
        heredoc("cd bar && ", " && echo done"),
        heredoc(suffix="\necho done"),
        heredoc(closer="NOT_THE_DELIMITER"),
        heredoc().replace("apply_patch <<", "apply_patch foo <<"),
        "apply_patch",
        "apply_patch a b",
        "ls -la",
        "bash -lc 'ls'",
        "bash -x " + shlex.quote(heredoc()),
        "python -c " + shlex.quote(heredoc()),
        "echo 'unbalanced",
        "",
    ],
)
def test_not_recognised(cmd: str) -> None:
    assert recognise_shell_patch(cmd) is None
