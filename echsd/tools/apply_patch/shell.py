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
import shlex
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
    delimiter = head.group("delimiter")
    body_lines: list[str] = []
    rest = script[head.end() :].split("\n")
    for index, line in enumerate(rest):
        candidate = line.rstrip("\r")
        if head.group("dash"):
            candidate = candidate.lstrip("\t")
        if candidate.rstrip() == delimiter:
            if any(after.strip() for after in rest[index + 1 :]):
                return None
            break
        body_lines.append(candidate)
    else:
        return None  # no closing delimiter line: not the form Codex takes either
    workdir = head.group("dir")
    if workdir is not None and workdir[:1] in ("'", '"'):
        workdir = workdir[1:-1]
    return ShellPatch("\n".join(body_lines).rstrip("\n"), workdir)


def _argument_form(script: str) -> ShellPatch | None:
    words = _split(script)
    if words is None or len(words) != 2 or words[0] not in COMMAND_NAMES:
        return None
    return ShellPatch(words[1], None)


def _shell_script(cmd: str) -> str | None:
    words = _split(cmd)
    if words is None or len(words) != 3:
        return None
    shell, flag, script = words
    if os.path.basename(shell) not in SHELLS or flag not in SHELL_FLAGS:
        return None
    return script


def _split(text: str) -> list[str] | None:
    try:
        return shlex.split(text, comments=False, posix=True)
    except ValueError:  # unbalanced quotes: not a command we could take apart
        return None
