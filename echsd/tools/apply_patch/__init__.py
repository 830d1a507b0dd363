"""The ``apply_patch`` tool: Codex's patch format, parsed, planned, applied all-or-nothing.

Modules, each with one job: ``model`` (the parsed patch and its errors), ``parser`` (text
to ``Patch``), ``seek`` (fuzzy line search), ``update`` (chunks applied to one file's
text), ``view`` (the file view Protocol) and ``disk`` (the real filesystem), ``plan``
(every change worked out in memory), ``commit`` (written all-or-nothing), ``report``
(summary and diff), ``apply`` (the entry point), ``shell`` (spotting a patch sent through
the shell tool), ``definitions`` (the tool shapes Codex offers) and ``tool`` (the adapter).
"""

from echsd.tools.apply_patch.apply import PatchOutcome, apply_patch
from echsd.tools.apply_patch.definitions import freeform_definition
from echsd.tools.apply_patch.disk import DiskView
from echsd.tools.apply_patch.model import PatchApplyError, PatchError, PatchParseError
from echsd.tools.apply_patch.parser import parse_patch
from echsd.tools.apply_patch.shell import ShellPatch, recognise_shell_patch
from echsd.tools.apply_patch.tool import ApplyPatchTool

__all__ = [
    "ApplyPatchTool",
    "DiskView",
    "PatchApplyError",
    "PatchError",
    "PatchOutcome",
    "PatchParseError",
    "ShellPatch",
    "apply_patch",
    "freeform_definition",
    "parse_patch",
    "recognise_shell_patch",
]
