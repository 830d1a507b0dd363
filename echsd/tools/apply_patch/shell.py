"""Recognise a patch sent through the shell tool, as Codex intercepts it (sans-IO).

Models trained on Codex often run ``apply_patch <<'EOF' ... EOF`` through
``exec_command``. Like Codex, the command is taken as a patch only when it is exactly one
of these forms, with nothing before or after it:

- ``apply_patch <<'EOF'`` (or ``applypatch``; the delimiter any word, quoted or not),
  the patch, then the delimiter line;
- the same behind ``cd DIR &&`` (``DIR`` a single word or one quoted string), which
  becomes the directory the patch's paths are relative to;
- either of them as the script of ``bash -lc`` / ``bash -c`` (also ``sh``, ``zsh``);
- ``apply_patch 'PATCH'`` with the whole patch as its only argument.

Anything else (``cd a; apply_patch``, ``... && echo done``, ``apply_patch file <<EOF``)
is an ordinary command and runs in the shell.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

COMMAND_NAMES = ("apply_patch", "applypatch")
SHELLS = ("bash", "sh", "zsh")
SHELL_FLAGS = ("-c", "-lc")

_WORD = r"""[^\s'"\\;&|<>()`$]+"""
_HEREDOC_COMMAND = re.compile(
    rf"""\s*
    (?:cd\s+(?P<dir>{_WORD}|'[^']*'|"[^"\\$`]*")\s*&&\s*)?
    (?:{'|'.join(COMMAND_NAMES)})
    [ \t]*<<(?P<dash>-?)[ \t]*(?P<quote>['"]?)(?P<delimiter>[A-Za-z_][A-Za-z0-9_]*)(?P=quote)[ \t]*\r?\n
    """,
    re.VERBOSE,
)


@dataclass(frozen=True)
class ShellPatch:
    patch: str
    workdir: str | None  # the ``cd`` directory, as written (relative to the command's cwd)


def recognise_shell_patch(cmd: str) -> ShellPatch | None:
    """The patch (and ``cd`` directory) if ``cmd`` is an apply_patch invocation, else None."""
    found = _heredoc_form(cmd) or _argument_form(cmd)
    if found is not None:
        return found
    script = _shell_script(cmd)
    if script is None:
        return None
    return _heredoc_form(script) or _argument_form(script)


def _heredoc_form(script: str) -> ShellPatch | None:
    head = _HEREDOC_COMMAND.match(script)
    if head is None:
        return None
    dash = bool(head.group("dash"))
    closing = _closing_line(script, head.end(), head.group("delimiter"), dash)
    if closing is None:
        return None  # no closing delimiter line: not the form Codex takes either
    if script[closing[1] :].strip():
        return None  # something runs after the patch
    body = script[head.end() : closing[0]]
    if "\r" in body:
        body = _CR_AT_LINE_END.sub("", body)
    if dash:
        body = _LEADING_TABS.sub("", body)
    workdir = head.group("dir")
    if workdir is not None and workdir[:1] in ("'", '"'):
        workdir = workdir[1:-1]
    return ShellPatch(body.rstrip("\n"), workdir)


def _closing_line(script: str, start: int, delimiter: str, dash: bool) -> tuple[int, int] | None:
    """Where the first line from ``start`` that closes the heredoc starts and ends: the
    delimiter (after tabs, with ``<<-``) and nothing but blanks. Found with ``str.find``
    (C, not a Python loop over 100,000 lines); each line is looked at once at most."""
    position = start
    while (found := script.find(delimiter, position)) >= 0:
        line_start = max(start, script.rfind("\n", start, found) + 1)
        line_end = script.find("\n", found)
        line_end = len(script) if line_end < 0 else line_end
        indent = script[line_start:found]
        if (not indent or (dash and not indent.strip("\t"))) and not script[found + len(delimiter) : line_end].strip():
            return line_start, line_end
        position = line_end + 1  # at most one place per line can hold the delimiter
    return None


# Whole-text operations instead of a loop over lines: a patch of 100,000 lines is read in C.
_CR_AT_LINE_END = re.compile(r"\r+(?=\n|\Z)")
_LEADING_TABS = re.compile(r"^\t+", re.MULTILINE)


def _argument_form(script: str) -> ShellPatch | None:
    if _first_word(script) not in COMMAND_NAMES:
        return None
    words = split_words(script, limit=2)
    if words is None or len(words) != 2 or words[0] not in COMMAND_NAMES:
        return None
    return ShellPatch(words[1], None)


def _shell_script(cmd: str) -> str | None:
    if os.path.basename(_first_word(cmd)) not in SHELLS:
        return None
    words = split_words(cmd, limit=3)
    if words is None or len(words) != 3:
        return None
    shell, flag, script = words
    if os.path.basename(shell) not in SHELLS or flag not in SHELL_FLAGS:
        return None
    return script


def _first_word(text: str) -> str:
    """The leading run of non-blank characters (cheap: decides whether splitting is worth it)."""
    head = _LEADING_WORD.match(text)
    return head.group(1) if head else ""


_BLANKS = " \t\r\n"  # shlex's whitespace
_LEADING_WORD = re.compile(rf"[{_BLANKS}]*([^{_BLANKS}]{{1,64}})")
_PIECE = re.compile(
    rf"""(?P<blank>[{_BLANKS}]+)
    |(?P<plain>[^{_BLANKS}'"\\]+)
    |'(?P<single>[^']*)'
    |"(?P<double>[^"\\]*(?:\\.[^"\\]*)*)"
    |\\(?P<escaped>.)""",
    re.VERBOSE | re.DOTALL,
)
_DOUBLE_QUOTED_ESCAPE = re.compile(r'\\(["\\])')


def split_words(text: str, *, limit: int) -> list[str] | None:
    """Split ``text`` into words as POSIX ``shlex.split`` does (no comments), in linear time.

    ``shlex`` grows each word one character at a time, quadratic in a long word (a model's
    one-line base64 blob took seconds). Here each quoted or plain run is one regex match.
    None for unbalanced quotes or a trailing backslash; stops early past ``limit`` words
    (then ``limit + 1`` words are returned, the last incomplete).
    """
    words: list[str] = []
    pieces: list[str] = []
    in_word = False
    position, end = 0, len(text)
    while position < end:
        match = _PIECE.match(text, position)
        if match is None:  # an unbalanced quote or a lone trailing backslash
            return None
        position = match.end()
        kind = match.lastgroup
        if kind == "blank":
            if in_word:
                words.append("".join(pieces))
                pieces, in_word = [], False
                if len(words) > limit:
                    return words
            continue
        in_word = True
        if kind == "double":
            pieces.append(_DOUBLE_QUOTED_ESCAPE.sub(r"\1", match.group(kind)))
        else:
            pieces.append(match.group(kind))
    if in_word:
        words.append("".join(pieces))
    return words
