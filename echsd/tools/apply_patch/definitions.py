"""How apply_patch is offered to the model, in the two shapes Codex uses (data only).

GPT-5-class models get a freeform custom tool whose input is constrained by Codex's Lark
grammar: the call arrives as a ``custom_tool_call`` item whose ``input`` is the raw patch
text. Models and endpoints without custom tools get a JSON function with one string
parameter, ``input``, described at length since no grammar guides them. The grammar and
the short freeform description are the ones Codex sends (models were trained on them);
the long description follows Codex's structure and wording closely.
"""

from __future__ import annotations

from typing import Any

TOOL_NAME = "apply_patch"

LARK_GRAMMAR = """start: begin_patch hunk+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?

hunk: add_hunk | delete_hunk | update_hunk
add_hunk: "*** Add File: " filename LF add_line+
delete_hunk: "*** Delete File: " filename LF
update_hunk: "*** Update File: " filename LF change_move? change?

filename: /(.+)/
add_line: "+" /(.*)/ LF -> line

change_move: "*** Move to: " filename LF
change: (change_context | change_line)+ eof_line?
change_context: ("@@" | "@@ " /(.+)/) LF
change_line: ("+" | "-" | " ") /(.*)/ LF
eof_line: "*** End of File" LF

%import common.LF
"""

FREEFORM_DESCRIPTION = (
    "Use the `apply_patch` tool to edit files. This is a FREEFORM tool, so do not wrap the patch in JSON."
)

FUNCTION_DESCRIPTION = """Use the `apply_patch` tool to edit files.
The patch language is a small, file-oriented diff format, easy to parse and safe to apply. Think of it as an envelope:

*** Begin Patch
[ one or more file sections ]
*** End Patch

Inside the envelope comes a sequence of file operations.
Every operation MUST start with a header naming the action. There are three headers:

*** Add File: <path> - create a new file. Every line after it is a + line (the file's initial contents).
*** Delete File: <path> - remove an existing file. Nothing follows it.
*** Update File: <path> - change an existing file in place (and optionally rename it).

An Update header may be followed right away by *** Move to: <new path> to rename the file.
Then come one or more "hunks", each introduced by @@ (optionally followed by a hunk header).
Within a hunk every line starts with ' ' (context, unchanged), '-' (removed) or '+' (added).

How much context ([context_before] and [context_after]) to show:
- By default, show the 3 lines immediately above and the 3 lines immediately below each change. When a change is within 3 lines of the previous one, do NOT repeat the first change's [context_after] lines as the second change's [context_before] lines.
- When 3 lines of context do not identify the place in the file uniquely, name the class or function the snippet belongs to with @@. For example:
@@ class BaseClass
[3 lines of pre-context]
- [old_code]
+ [new_code]
[3 lines of post-context]

- When a block of code repeats so often within a class or function that one @@ line and 3 lines of context still do not identify it, stack several @@ lines to narrow down to the right place. For example:

@@ class BaseClass
@@ \t def method():
[3 lines of pre-context]
- [old_code]
+ [new_code]
[3 lines of post-context]

The complete grammar:
Patch := Begin { FileOp } End
Begin := "*** Begin Patch" NEWLINE
End := "*** End Patch" NEWLINE
FileOp := AddFile | DeleteFile | UpdateFile
AddFile := "*** Add File: " path NEWLINE { "+" line NEWLINE }
DeleteFile := "*** Delete File: " path NEWLINE
UpdateFile := "*** Update File: " path NEWLINE [ MoveTo ] { Hunk }
MoveTo := "*** Move to: " newPath NEWLINE
Hunk := "@@" [ header ] NEWLINE { HunkLine } [ "*** End of File" NEWLINE ]
HunkLine := (" " | "-" | "+") text NEWLINE

One patch can combine several operations:

*** Begin Patch
*** Add File: hello.txt
+Hello world
*** Update File: src/app.py
*** Move to: src/main.py
@@ def greet():
-print("Hi")
+print("Hello, world!")
*** Delete File: obsolete.txt
*** End Patch

Remember:

- Every operation needs its header with the intended action (Add/Delete/Update)
- Prefix every new line with `+`, also when creating a new file
- File paths must be relative, NEVER ABSOLUTE.
"""

INPUT_DESCRIPTION = "The entire contents of the apply_patch command"

FUNCTION_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": INPUT_DESCRIPTION}},
    "required": ["input"],
    "additionalProperties": False,
}


def freeform_definition() -> dict[str, Any]:
    """The custom tool for the Responses request's ``tools`` (GPT-5-class models)."""
    return {
        "type": "custom",
        "name": TOOL_NAME,
        "description": FREEFORM_DESCRIPTION,
        "format": {"type": "grammar", "syntax": "lark", "definition": LARK_GRAMMAR},
    }
