"""The sans-IO halves of grep_files' fallback: ripgrep's globs and ignore lines, Rust regexes."""

from __future__ import annotations

import re

import pytest

from echsd.tools.ignore_rules import GlobError, IncludeGlobs, Rules, Verdict, gitignore_rule, glob_regex
from echsd.tools.rust_regex import RegexError, translate


@pytest.mark.parametrize(
    ("glob", "matches", "misses"),
    [
        ("*.rs", ["main.rs", ".rs"], ["a/main.rs", "main.rsx"]),
        ("**/*.rs", ["main.rs", "a/b/main.rs"], ["main.r"]),
        ("src/**/*.ts", ["src/a.ts", "src/x/y/a.ts"], ["lib/src/a.ts", "src/a.tsx"]),
        ("*.{ts,tsx}", ["a.ts", "a.tsx"], ["a.t", "a/b.ts"]),
        ("{a,{b,c}}x", ["ax", "bx", "cx"], ["dx"]),
        ("foo/**", ["foo/a", "foo/a/b"], ["foo"]),
        ("**", ["", "a/b/c"], []),
        ("a**b", ["ab", "axxb"], ["a/b"]),
        ("[!a-c]x", ["dx"], ["ax", "cx"]),
        ("[abc", ["[abc"], ["a"]),
        ("a?c", ["abc"], ["a/c", "ac"]),
        ("\\*x", ["*x"], ["ax"]),
        ("a,b", ["a,b"], ["a"]),
    ],
)
def test_globs_compile_like_globset(glob: str, matches: list[str], misses: list[str]) -> None:
    regex = re.compile(glob_regex(glob))
    assert all(regex.fullmatch(path) for path in matches), glob
    assert not any(regex.fullmatch(path) for path in misses), glob


@pytest.mark.parametrize("glob", ["{a", "a}", "[z-a]", "a\\"])
def test_bad_globs(glob: str) -> None:
    with pytest.raises(GlobError):
        glob_regex(glob)


def test_ignore_lines() -> None:
    assert gitignore_rule("# comment") is None and gitignore_rule("   ") is None
    anywhere = gitignore_rule("*.log")
    assert anywhere is not None and anywhere.regex.fullmatch("a/b/x.log") and not anywhere.whitelist
    anchored = gitignore_rule("/build")
    assert anchored is not None and anchored.regex.fullmatch("build") and not anchored.regex.fullmatch("a/build")
    only_dir = gitignore_rule("out/")
    assert only_dir is not None and only_dir.only_dir and only_dir.regex.fullmatch("x/out")
    negated = gitignore_rule("!keep.log")
    assert negated is not None and negated.whitelist
    literal = gitignore_rule("\\#notes")
    assert literal is not None and literal.regex.fullmatch("#notes")
    trailing = gitignore_rule("name  ")
    assert trailing is not None and trailing.regex.fullmatch("name")
    kept_space = gitignore_rule("name\\ ")
    assert kept_space is not None and kept_space.regex.fullmatch("name ")


def test_rules_last_match_wins_relative_to_their_directory() -> None:
    rules = Rules.from_text("/repo", "\ufeff*.log\n!keep.log\nbuild/\n[bad\n")
    assert rules.match("/repo/a/x.log", False) is Verdict.IGNORE
    assert rules.match("/repo/a/keep.log", False) is Verdict.WHITELIST
    assert rules.match("/repo/build", True) is Verdict.IGNORE
    assert rules.match("/repo/build", False) is None
    assert rules.match("/repo/[bad", False) is Verdict.IGNORE
    assert Rules.from_text("/repo", "/src/gen\n").match("/repo/src/gen", False) is Verdict.IGNORE


def test_include_globs_keep_only_what_they_name() -> None:
    include = IncludeGlobs("/cwd", ["*.py"])
    assert include.match("/cwd/a/x.py", False) is Verdict.WHITELIST
    assert include.match("/cwd/a/x.txt", False) is Verdict.IGNORE
    assert include.match("/cwd/a", True) is None  # directories are walked unless named
    exclude = IncludeGlobs("/cwd", ["!*.md"])
    assert exclude.match("/cwd/r.md", False) is Verdict.IGNORE
    assert exclude.match("/cwd/r.txt", False) is None


@pytest.mark.parametrize(
    ("rust", "python"),
    [
        ("foo", "foo"),
        (r"\Afoo\z", "^foo$"),
        ("(?i)abc", "(?i:abc)"),
        ("x(?i)y|z", "x(?i:y)|(?i:z)"),
        ("(a(?i)b|c)d", "(a(?i:b)|(?i:c))d"),
        ("[[:digit:][:upper:]]+", "[0-9A-Z]+"),
        (r"\x{263A}", r"\U0000263A"),
        (r"[\x{41}-\x{5A}]", r"[\U00000041-\U0000005A]"),
        ("(?<year>\\d+)", "(?P<year>\\d+)"),
        (r"\<w\>", r"\b(?=\w)w\b(?<=\w)"),
        (r"\b{start}x", r"\b(?=\w)x"),
        ("[]a]", "[\\]a]"),
    ],
)
def test_rust_regex_translation(rust: str, python: str) -> None:
    assert translate(rust) == python
    re.compile(python)


@pytest.mark.parametrize(
    ("rust", "message"),
    [
        ("a(?=b)", "look-around"),
        ("(?<!a)b", "look-around"),
        (r"(a)\1", "backreferences"),
        ("a\\nb", 'literal "\\\\n"'),
        ("a\nb", 'literal "\\\\n"'),
        (r"\p{Greek}", "install ripgrep"),
        ("[[:^alpha:]]", "install ripgrep"),
        ("[a&&b]", "set operations"),
        ("(?U)a+", "inline flag"),
        ("[abc", "unclosed"),
        ("abc\\", "incomplete escape"),
    ],
)
def test_rust_regex_refusals(rust: str, message: str) -> None:
    with pytest.raises(RegexError, match=message):
        translate(rust)
