"""Reading commands for approval rules: literal simple commands only, linear in the input."""

from __future__ import annotations

import time

import pytest

from echsd.shell_words import MAX_CHARS, commands, simple_command


@pytest.mark.parametrize(
    ("text", "argv"),
    [
        ("git status", ["git", "status"]),
        ("  git   status  ", ["git", "status"]),
        ("pytest -q tests/unit", ["pytest", "-q", "tests/unit"]),
        ("echo 'a b' \"c d\" e\\ f", ["echo", "a b", "c d", "e f"]),
        ("grep 'x;y|z' file", ["grep", "x;y|z", "file"]),
        ("echo \"a\\\"b\" \"c\\d\"", ["echo", 'a"b', "c\\d"]),
        ("echo ''", ["echo", ""]),
        ("git commit -m 'fix: a=b'", ["git", "commit", "-m", "fix: a=b"]),
        ("make CC=gcc", ["make", "CC=gcc"]),
        ("echo \\;", ["echo", ";"]),
    ],
)
def test_literal_simple_commands_are_read(text: str, argv: list[str]) -> None:
    assert simple_command(text) == argv


@pytest.mark.parametrize(
    "text",
    [
        "git status; rm -rf x",
        "git status && rm -rf x",
        "git status || true",
        "git status | sh",
        "git status > out",
        "git status < in",
        "git status &",
        "git status $(rm -rf x)",
        "git status `rm -rf x`",
        'git status "$(rm -rf x)"',
        "git status $HOME",
        "git status ~",
        "git status *",
        "git {status,push}",
        "(git status)",
        "git status # comment",
        "git status\nrm -rf x",
        "X=1 git status",
        "git status \\\nrm",
        "echo 'unterminated",
        "",
        "   ",
    ],
)
def test_anything_the_shell_could_read_otherwise_is_refused(text: str) -> None:
    assert simple_command(text) is None


def test_lists_and_pipelines_are_split_for_deny_rules() -> None:
    assert commands("make; rm -rf x && echo 'a;b' | tee log") == [["make"], ["rm", "-rf", "x"], ["echo", "a;b"], ["tee", "log"]]
    assert commands("ls $(rm -rf x); pwd") == [None, ["pwd"]]


def test_a_huge_command_is_never_read_and_costs_little() -> None:
    huge = "echo " + "a" * 5_000_000
    started = time.perf_counter()
    assert simple_command(huge) is None and commands(huge) == []
    worst = "-" + "=" * (MAX_CHARS - 1)  # a first word full of "=" (the assignment check runs once)
    assert simple_command(worst) == [worst]
    assert time.perf_counter() - started < 1.0
