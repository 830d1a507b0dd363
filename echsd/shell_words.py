"""Read a shell command as argv, conservatively, in one linear pass: for approval rules.

``simple_command(text)`` is the argv of ``text`` when it is one simple command whose words
are all literal: plain words, single quotes, double quotes without ``$`` or backquotes,
backslash escapes. Anything the shell could make mean something else gives None:
operators (``;``, ``&``, ``|``, ``&&``), redirections, substitutions and expansions
(``$``, backquotes, globs, ``~``, braces), subshells, comments, variable assignments, a
newline. ``commands(text)`` splits a list or pipeline at its operators and reads each part
the same way (None for a part it cannot read), so a rule that refuses ``rm`` sees the
``rm`` in ``make; rm -rf x``.

One pass over at most ``MAX_CHARS`` characters (a longer command is never read: no rule
matches it), so the cost is bounded whatever the model sends.
"""

from __future__ import annotations

MAX_CHARS = 16_384
_SPECIAL = set("$`*?[]{}~#()<>;&|!\n\r")  # unquoted, any of these makes a word non-literal
_IN_DOUBLE = set("$`")  # inside double quotes these expand
_SEPARATORS = set(";&|\n")


def simple_command(text: str) -> list[str] | None:
    """The argv of ``text`` if it is one literal simple command, else None."""
    if len(text) > MAX_CHARS:
        return None
    words: list[str] = []
    word: list[str] = []
    in_word = False
    quote = ""
    escaped = in_double_escape = assigned = False
    for char in text:
        if escaped:
            if char in "\n\r":
                return None  # a line continuation
            word.append(char)
            escaped = False
        elif quote == "'":
            if char == "'":
                quote = ""
            else:
                word.append(char)
        elif quote == '"':
            if in_double_escape:
                word.append(char if char in '$`"\\' else "\\" + char)  # bash keeps other backslashes
                in_double_escape = False
            elif char == '"':
                quote = ""
            elif char in _IN_DOUBLE:
                return None
            elif char == "\\":
                in_double_escape = True
            else:
                word.append(char)
        elif char in " \t":
            if in_word:
                words.append("".join(word))
                word, in_word = [], False
        elif char in _SPECIAL:
            return None
        else:
            in_word = True
            if char == "\\":
                escaped = True
            elif char in "'\"":
                quote = char
            else:
                if char == "=" and not words and not assigned:
                    assigned = True  # only the first "=" of the first word can make an assignment
                    if "".join(word).isidentifier():
                        return None  # NAME=value: an assignment, not a command name
                word.append(char)
    if quote or escaped or in_double_escape:
        return None
    if in_word:
        words.append("".join(word))
    return words or None


def commands(text: str) -> list[list[str] | None]:
    """Each part of a list or pipeline, read by ``simple_command`` (outside quotes, split at
    ``;``, ``&``, ``|`` and newlines). Empty for a command longer than ``MAX_CHARS``."""
    if len(text) > MAX_CHARS:
        return []
    parts: list[str] = []
    start = 0
    quote = ""
    escaped = False
    for index, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in _SEPARATORS:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return [simple_command(part) for part in parts if part.strip()]
