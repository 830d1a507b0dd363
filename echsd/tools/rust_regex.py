"""Rust ``regex`` syntax (what ripgrep takes) rewritten for Python's ``re`` (sans-IO).

grep_files' Python fallback must match what ripgrep would, so a pattern written for
ripgrep is translated where the dialects differ: ``\\A``/``\\z`` (line anchors, as ripgrep
searches line by line), ``\\<``/``\\>`` and ``\\b{...}``
boundaries, ``\\x{...}`` code points, ``(?<name>...)``, POSIX classes ``[[:alpha:]]`` (ASCII,
as in Rust), and inline flags ``(?i)`` anywhere (Rust scopes them to the rest of the group;
Python only takes them at the start). What ripgrep refuses is refused with its words
(look-around, backreferences, a literal newline); what Python cannot express (Unicode
classes ``\\p{...}``, nested classes, set operations) is refused with a clear message.
"""

from __future__ import annotations

import re


class RegexError(ValueError):
    """The pattern cannot be searched; the message says why."""


NEEDS_RG = "is not supported by grep_files' Python fallback (install ripgrep, `rg`, to use it)"

_POSIX = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7F",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1F\\x7F",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
_BOUNDARIES = {
    "<": r"\b(?=\w)",
    ">": r"\b(?<=\w)",
    "b{start}": r"\b(?=\w)",
    "b{end}": r"\b(?<=\w)",
    "b{start-half}": r"(?<!\w)",
    "b{end-half}": r"(?!\w)",
}
# ripgrep matches line by line, so text start/end are line start/end (we compile MULTILINE).
_LINE_ANCHORS = {"A": "^", "z": "$"}
_FLAGS = re.compile(r"\(\?([A-Za-z-]*)([:)])")
_CODEPOINT = re.compile(r"[xuU]\{([0-9A-Fa-f]{1,8})\}")


def translate(pattern: str) -> str:
    """The Python equivalent of a Rust regex; raises ``RegexError``."""
    return _Translator(pattern).run()


class _Translator:
    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.pos = 0
        self.out: list[str] = []
        # Per open group: the inline flags set so far in it (each an extra scoped group).
        self.scopes: list[list[str]] = [[]]

    def run(self) -> str:
        while self.pos < len(self.pattern):
            char = self.pattern[self.pos]
            if char == "\n":
                raise RegexError('the literal "\\n" is not allowed in a regex')
            if char == "\\":
                self._escape()
            elif char == "[":
                self._class()
            elif char == "(":
                self._group()
            elif char == ")":
                self._close(")")
                if len(self.scopes) > 1:
                    self.scopes.pop()
                self.pos += 1
            elif char == "|":
                flags = self.scopes[-1]
                self.out.append(")" * len(flags) + "|" + "".join(f"(?{f}:" for f in flags))
                self.pos += 1
            else:
                self.out.append(char)
                self.pos += 1
        self.out.append(")" * sum(len(flags) for flags in self.scopes))
        return "".join(self.out)

    def _close(self, text: str) -> None:
        self.out.append(")" * len(self.scopes[-1]) + text)

    def _escape(self) -> None:
        rest = self.pattern[self.pos + 1 :]
        if not rest:
            raise RegexError("incomplete escape sequence at the end of the pattern")
        for name, replacement in _BOUNDARIES.items():
            if rest.startswith(name):
                self.out.append(replacement)
                self.pos += 1 + len(name)
                return
        head = rest[0]
        if head == "n":
            raise RegexError('the literal "\\n" is not allowed in a regex')
        if head.isdigit() or head == "k":
            raise RegexError("backreferences are not supported")
        if head in "pP":
            raise RegexError(f"the Unicode class \\{head}... {NEEDS_RG}")
        if self._codepoint(rest):
            return
        self.out.append(_LINE_ANCHORS.get(head, "\\" + head))
        self.pos += 2

    def _class(self) -> None:
        """Copy a bracket class, expanding POSIX classes; refuse nesting and set operations."""
        self.out.append("[")
        self.pos += 1
        if self.pattern.startswith("^", self.pos):
            self.out.append("^")
            self.pos += 1
        if self.pattern.startswith("]", self.pos):
            self.out.append("\\]")
            self.pos += 1
        while self.pos < len(self.pattern):
            char = self.pattern[self.pos]
            if char == "]":
                self.out.append("]")
                self.pos += 1
                return
            if char == "\\":
                self._class_escape()
                continue
            if char == "[":
                posix = re.match(r"\[:(\^?)([a-z]+):\]", self.pattern[self.pos :])
                if not posix or posix.group(1) or posix.group(2) not in _POSIX:
                    raise RegexError(f"nested or negated classes inside [...] {NEEDS_RG}")
                self.out.append(_POSIX[posix.group(2)])
                self.pos += posix.end()
                continue
            if self.pattern.startswith(("&&", "~~"), self.pos) or self.pattern.startswith("--", self.pos):
                raise RegexError(f"class set operations ({self.pattern[self.pos:self.pos + 2]}) {NEEDS_RG}")
            self.out.append(char)
            self.pos += 1
        raise RegexError("unclosed character class")

    def _class_escape(self) -> None:
        rest = self.pattern[self.pos + 1 :]
        if not rest:
            raise RegexError("incomplete escape sequence at the end of the pattern")
        if rest[0] in "pP":
            raise RegexError(f"the Unicode class \\{rest[0]}... {NEEDS_RG}")
        if self._codepoint(rest):
            return
        self.out.append("\\" + rest[0])
        self.pos += 2

    def _codepoint(self, rest: str) -> bool:
        """``\\x{263A}`` (also ``\\u{..}``, ``\\U{..}``) as Python's ``\\U0000263A``."""
        codepoint = _CODEPOINT.match(rest)
        if codepoint is None:
            return False
        self.out.append(f"\\U{int(codepoint.group(1), 16):08X}")
        self.pos += 1 + codepoint.end()
        return True

    def _group(self) -> None:
        rest = self.pattern[self.pos :]
        if rest.startswith(("(?=", "(?!", "(?<=", "(?<!")):
            raise RegexError("look-around, including look-ahead and look-behind, is not supported")
        flags = _FLAGS.match(rest)
        if flags:
            letters = flags.group(1)
            unknown = set(letters) - set("imsx-")
            if unknown:
                raise RegexError(f"the inline flag(s) {''.join(sorted(unknown))} {NEEDS_RG}")
            if flags.group(2) == ")":  # (?i): on for the rest of the enclosing group
                if letters:
                    self.scopes[-1].append(letters)
                    self.out.append(f"(?{letters}:")
                self.pos += flags.end()
                return
            self.out.append(f"(?{letters}:" if letters else "(?:")
            self.pos += flags.end()
        elif rest.startswith("(?P<"):
            self.out.append("(?P<")
            self.pos += 4
        elif rest.startswith("(?<"):
            self.out.append("(?P<")
            self.pos += 3
        else:
            self.out.append("(")
            self.pos += 1
        self.scopes.append([])
