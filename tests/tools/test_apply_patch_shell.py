"""Spotting ``apply_patch <<'EOF'`` sent through exec_command, as Codex does (sans-IO)."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from echsd.tools.apply_patch.shell import ShellPatch, recognise_shell_patch, split_words

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


_SHELL_TEXT = st.text(alphabet=st.sampled_from(list("ab \t\n'\"\\$;&")), max_size=40)


@given(_SHELL_TEXT)
@settings(max_examples=2000, deadline=None)
def test_split_words_is_shlex_split(text: str) -> None:
    try:
        expected: list[str] | None = shlex.split(text, comments=False, posix=True)
    except ValueError:
        expected = None
    assert split_words(text, limit=len(text) + 1) == expected


def test_split_words_stops_past_the_limit() -> None:
    assert split_words("a b c d 'unbalanced", limit=2) == ["a", "b", "c"]


def test_one_long_word_is_taken_apart_whole() -> None:
    """A one-line base64 blob, as models write binary files (shlex was quadratic in it)."""
    blob = "QUJD" * 500_000  # 2 MB
    assert recognise_shell_patch(f"echo '{blob}' | base64 -d > f") is None
    assert recognise_shell_patch("apply_patch " + shlex.quote(blob)) == ShellPatch(blob, None)
    assert recognise_shell_patch("bash -lc " + shlex.quote(f"apply_patch '{blob}'")) == ShellPatch(blob, None)


def _heredoc_by_lines(cmd: str) -> ShellPatch | None:
    """The line-by-line reading the whole-text regexes replaced (the reference)."""
    from echsd.tools.apply_patch.shell import _HEREDOC_COMMAND

    head = _HEREDOC_COMMAND.match(cmd)
    if head is None:
        return None
    body_lines: list[str] = []
    rest = cmd[head.end() :].split("\n")
    for index, line in enumerate(rest):
        candidate = line.rstrip("\r")
        if head.group("dash"):
            candidate = candidate.lstrip("\t")
        if candidate.rstrip() == head.group("delimiter"):
            if any(after.strip() for after in rest[index + 1 :]):
                return None
            break
        body_lines.append(candidate)
    else:
        return None
    return ShellPatch("\n".join(body_lines).rstrip("\n"), None)


_HEREDOC_BODY = st.lists(st.sampled_from(["EOF", "\n", "\r", "\t", " ", "x", "\x0b", "\u00a0", "*** End Patch"]), max_size=30).map("".join)


@given(st.sampled_from(["apply_patch <<EOF\n", "apply_patch <<-'EOF'\n", "applypatch << \"EOF\"\r\n"]), _HEREDOC_BODY)
@settings(max_examples=2000, deadline=None)
def test_heredoc_body_as_read_line_by_line(head: str, body: str) -> None:
    from echsd.tools.apply_patch.shell import _heredoc_form

    assert _heredoc_form(head + body) == _heredoc_by_lines(head + body)
