"""Ignore files and glob filters with ripgrep's semantics (sans-IO), for grep_files' fallback.

grep_files must find the same files whether ripgrep runs or our Python walk does, so this
follows ripgrep's ``ignore`` crate rather than git: globs are ``globset`` globs (``*`` and
``?`` stop at ``/``, ``**`` spans directories, ``{a,b}`` alternates (nested too), ``[...]``
classes, ``\\`` escapes); a pattern without a ``/`` matches at any depth; a trailing ``/`` matches
directories only; ``!`` re-includes; the last matching line of a file wins; paths are
matched relative to the directory holding the rules (a plain byte-prefix strip, as there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum


class Verdict(Enum):
    IGNORE = "ignore"
    WHITELIST = "whitelist"


class GlobError(ValueError):
    """A glob that does not parse (unbalanced alternation, bad range, dangling ``\\``)."""


# Tokens of a parsed glob; strings are literals.
ANY, STAR, PREFIX, SUFFIX, MIDDLE = "ANY", "STAR", "PREFIX", "SUFFIX", "MIDDLE"
_TOKEN_REGEX = {ANY: "[^/]", STAR: "[^/]*", PREFIX: "(?:/?|.*/)", SUFFIX: "/.*", MIDDLE: "(?:/|/.*/)"}


@dataclass(frozen=True)
class _Class:
    negated: bool
    ranges: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class _Alternates:
    branches: tuple[tuple[object, ...], ...]


def glob_regex(glob: str) -> str:
    """The Python regex (to be matched whole) a globset glob compiles to.

    As ripgrep builds ignore-file globs: an unclosed ``[`` is a literal ``[``.
    """
    tokens = _GlobParser(glob).parse()
    if tokens == [PREFIX]:
        return ".*"
    return _tokens_regex(tokens)


def _tokens_regex(tokens: list[object] | tuple[object, ...]) -> str:
    out = []
    for token in tokens:
        if isinstance(token, _Class):
            body = "".join(re.escape(a) if a == b else f"{re.escape(a)}-{re.escape(b)}" for a, b in token.ranges)
            out.append(f"[{'^' if token.negated else ''}{body}]")
        elif isinstance(token, _Alternates):
            branches = [part for part in (_tokens_regex(branch) for branch in token.branches) if part]
            if branches:
                out.append("(?:" + "|".join(branches) + ")")
        elif token in _TOKEN_REGEX:
            out.append(_TOKEN_REGEX[str(token)])
        else:
            out.append(re.escape(str(token)))
    return "".join(out)


class _GlobParser:
    def __init__(self, glob: str) -> None:
        self.glob = glob
        self.pos = 0  # index of the next character
        self.branches: list[list[object]] = [[]]  # the last one receives tokens
        self.alternations: list[int] = []  # per open ``{``: index of its first branch
        self.unclosed_class = False

    def parse(self) -> list[object]:
        while (char := self._bump()) is not None:
            if char == "?":
                self._push(ANY)
            elif char == "*":
                self._star()
            elif char == "[" and not self.unclosed_class:
                self._class()
            elif char == "{":
                self.alternations.append(len(self.branches))
                self.branches.append([])
            elif char == "}":
                if not self.alternations:
                    raise GlobError(f"unopened alternation group in glob {self.glob!r}")
                start = self.alternations.pop()
                branches = tuple(tuple(branch) for branch in self.branches[start:])
                del self.branches[start:]
                self._push(_Alternates(branches))
            elif char == "," and self.alternations:
                self.branches.append([])
            elif char == "\\":
                escaped = self._bump()
                if escaped is None:
                    raise GlobError(f"dangling '\\' in glob {self.glob!r}")
                self._push(escaped)
            else:
                self._push(char)
        if len(self.branches) > 1:
            raise GlobError(f"unclosed alternation group in glob {self.glob!r}")
        return self.branches[0]

    def _push(self, token: object) -> None:
        self.branches[-1].append(token)

    def _peek(self) -> str | None:
        return self.glob[self.pos] if self.pos < len(self.glob) else None

    def _bump(self) -> str | None:
        char = self._peek()
        self.pos += 1
        return char

    def _before(self, index: int) -> str | None:
        return self.glob[index - 1] if 0 < index <= len(self.glob) else None

    def _star(self) -> None:
        before = self._before(self.pos - 1)  # the character before this ``*``
        tokens = self.branches[-1]
        if self._peek() != "*":
            tokens.append(STAR)
            return
        self._bump()
        if not tokens:
            if self._peek() not in (None, "/"):
                tokens.extend((STAR, STAR))
            else:
                tokens.append(PREFIX)
                self._bump()
            return
        if before != "/" and (len(self.branches) <= 1 or before not in (",", "{")):
            tokens.extend((STAR, STAR))
            return
        following = self._peek()
        if following is None:
            is_suffix = True
        elif following in (",", "}") and len(self.branches) >= 2:
            is_suffix = True
        elif following == "/":
            self._bump()
            is_suffix = False
        else:
            tokens.extend((STAR, STAR))
            return
        last = tokens.pop()
        if last in (PREFIX, SUFFIX):
            tokens.append(last)
        else:
            tokens.append(SUFFIX if is_suffix else MIDDLE)

    def _class(self) -> None:
        resume = self.pos
        negated = self._peek() in ("!", "^")
        if negated:
            self._bump()
        ranges: list[tuple[str, str]] = []
        first, in_range = True, False
        while True:
            char = self._bump()
            if char is None:  # unclosed: the ``[`` is a literal, the rest parses on
                self.pos = resume
                self.unclosed_class = True
                self._push("[")
                return
            if char == "]" and not first:
                break
            if char == "-" and not first and not in_range:
                in_range = True
            elif in_range:
                start = ranges[-1][0]
                if char < start:
                    raise GlobError(f"invalid range {start}-{char} in glob {self.glob!r}")
                ranges[-1] = (start, char)
                in_range = False
            else:
                ranges.append((char, char))
            first = False
        if in_range:
            ranges.append(("-", "-"))
        self._push(_Class(negated, tuple(ranges)))


@dataclass(frozen=True)
class Rule:
    regex: re.Pattern[str]
    whitelist: bool
    only_dir: bool


def gitignore_rule(line: str) -> Rule | None:
    """One line of an ignore file as ripgrep reads it; None for blanks and comments."""
    if line.startswith("#"):
        return None
    if not line.endswith("\\ "):
        line = line.rstrip()
    if not line:
        return None
    whitelist = anchored = False
    if line.startswith(("\\!", "\\#")):
        line = line[1:]
        anchored = line.startswith("/")
    else:
        if line.startswith("!"):
            whitelist, line = True, line[1:]
        if line.startswith("/"):
            anchored, line = True, line[1:]
    only_dir = line.endswith("/")
    if only_dir:
        line = line[:-1]
        if line.endswith("\\"):
            line = line[:-1]
    if not anchored and "/" not in line and not line.startswith("**/"):
        line = "**/" + line
    if line.endswith("/**"):
        line += "/*"
    return Rule(re.compile(glob_regex(line)), whitelist, only_dir)


class Rules:
    """The rules of one ignore file (or the include globs), relative to ``root``."""

    def __init__(self, root: str, rules: list[Rule]) -> None:
        self.root = root
        self.rules = rules

    @classmethod
    def from_text(cls, root: str, text: str) -> "Rules":
        rules = []
        for number, line in enumerate(text.splitlines()):
            if number == 0:
                line = line.lstrip("\ufeff")
            try:
                rule = gitignore_rule(line)
            except GlobError:
                continue  # ripgrep skips a bad line and keeps the rest
            if rule is not None:
                rules.append(rule)
        return cls(root, rules)

    def strip(self, path: str) -> str:
        if self.root != "." and "/" in path and path.startswith(self.root):
            path = path[len(self.root) :]
            if path.startswith("/"):
                path = path[1:]
        return path

    def match(self, path: str, is_dir: bool) -> Verdict | None:
        if not self.rules:
            return None
        candidate = self.strip(path)
        for rule in reversed(self.rules):
            if (is_dir or not rule.only_dir) and rule.regex.fullmatch(candidate):
                return Verdict.WHITELIST if rule.whitelist else Verdict.IGNORE
        return None


class IncludeGlobs:
    """``--glob`` overrides: a plain glob keeps only matching files, ``!glob`` drops matches.

    A match decides at once, before ignore files and the hidden-file rule (so ``*.py``
    also finds a gitignored or hidden ``.x.py`` in a directory that is walked).
    """

    def __init__(self, root: str, globs: list[str]) -> None:
        rules = [rule for rule in map(gitignore_rule, globs) if rule is not None]
        self.rules = Rules(root, rules)
        self.keeps_only = any(not glob.startswith("!") for glob in globs)

    def match(self, path: str, is_dir: bool) -> Verdict | None:
        verdict = self.rules.match(path, is_dir)
        if verdict is None and self.keeps_only and not is_dir:
            return Verdict.IGNORE
        if verdict is None:
            return None
        return Verdict.IGNORE if verdict is Verdict.WHITELIST else Verdict.WHITELIST
