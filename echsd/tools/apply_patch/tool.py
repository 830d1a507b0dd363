"""``apply_patch`` as a tool: the patch text in, Codex's summary (or a dry-run diff) out.

The same patch can arrive three ways: as a function call ``{"input": PATCH}``, as a
custom tool call whose raw ``input`` is the patch (pass ``{"input": item["input"]}``),
or as an ``exec_command`` running ``apply_patch <<'EOF'`` (``intercept_exec_command``).
Parsing and applying run in a worker thread, off the event loop; a patch that fails
changes no file, and the model is told so, with what to fix. The thread's ``writes``
policy (``ToolContext.writes``) decides what happens to files: ``allow`` applies,
``dry-run`` reports the diff it would apply and writes nothing, ``deny`` refuses. On top of
it, the thread's sandbox (``ToolContext.sandbox``) is checked as the kernel would check a
command: a patch touching any path its sandbox does not let the thread write is refused
whole, before anything is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable

import trio

from echsd.tools.apply_patch.apply import PatchOutcome, apply_patch
from echsd.tools.apply_patch.definitions import FUNCTION_DESCRIPTION, FUNCTION_PARAMETERS, TOOL_NAME, freeform_definition
from echsd.tools.apply_patch.disk import DiskView
from echsd.tools.apply_patch.model import PatchError
from echsd.tools.apply_patch.shell import ShellPatch, recognise_shell_patch
from echsd.tools.base import ToolContext, ToolError, ToolResult, ToolSpec
from echsd.tools.sandbox.layout import layout
from echsd.tools.sandbox.policy import SandboxPolicy
from echsd.tools.truncate import DEFAULT_MAX_CHARS, truncate_middle

SPEC = ToolSpec(
    name=TOOL_NAME,
    description=FUNCTION_DESCRIPTION,
    parameters=FUNCTION_PARAMETERS,
    parallel_safe=False,
    writes=True,
    freeform=freeform_definition(),
)

NOTHING_CHANGED = "No file was changed (a patch is applied whole or not at all); fix the patch and send all of it again."


class ApplyPatchTool:
    spec = SPEC

    @staticmethod
    def custom_definition() -> dict[str, Any]:
        """The freeform (custom tool) form of this tool, for models that support it."""
        return freeform_definition()

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        patch = args.get("input")
        if not isinstance(patch, str):
            raise ToolError("apply_patch needs the patch text as a string in 'input'")
        return await self._apply(patch, ctx.cwd, ctx)

    async def intercept_exec_command(self, args: dict[str, Any], ctx: ToolContext, found: ShellPatch | None = None) -> ToolResult | None:
        """Apply the patch if this ``exec_command`` call is an apply_patch invocation, else None.

        ``args`` are exec_command's checked arguments; paths resolve against its
        ``workdir`` (if any) and then the ``cd DIR`` of the command (if any). ``found``:
        the command already recognised (by the caller, off the event loop).
        """
        command = args.get("cmd")
        if found is None and isinstance(command, str):
            found = recognise_shell_patch(command)
        if found is None:
            return None
        cwd = ctx.cwd
        for directory in (args.get("workdir"), found.workdir):
            if directory:
                cwd = cwd / Path(directory).expanduser()
        return await self._apply(found.patch, cwd, ctx)

    async def _apply(self, patch: str, cwd: Path, ctx: ToolContext) -> ToolResult:
        if ctx.writes == "deny":
            raise ToolError("file changes are denied for this thread (writes=deny): no file was changed")
        dry_run = ctx.writes == "dry-run"
        outcome = await trio.to_thread.run_sync(_apply_in_thread, patch, cwd, dry_run, ctx.sandbox)
        changes = [{"op": change.letter, "path": change.new_path} for change in outcome.changes]
        return ToolResult(
            output=truncate_middle(outcome.text(), DEFAULT_MAX_CHARS),
            meta={"changes": changes, "dry_run": dry_run},
        )


def _apply_in_thread(patch: str, cwd: Path, dry_run: bool, policy: SandboxPolicy | None) -> PatchOutcome:
    if not cwd.is_dir():
        raise ToolError(f"working directory {str(cwd)!r} does not exist; {NOTHING_CHANGED}")
    try:
        return apply_patch(patch, DiskView(cwd), dry_run=dry_run, permit=None if policy is None else _sandbox_permit(policy))
    except PatchError as exc:
        raise ToolError(f"{exc}\n{NOTHING_CHANGED}") from None


def _sandbox_permit(policy: SandboxPolicy) -> Callable[[Iterable[str]], None]:
    def permit(paths: Iterable[str]) -> None:
        if not policy.confines_files:
            return
        plan = layout(policy)
        refused = [path for path in paths if not plan.may_write(path)]
        if refused:
            shown = ", ".join(refused[:5]) + (f" and {len(refused) - 5} more" if len(refused) > 5 else "")
            raise ToolError(
                f"the thread's sandbox ({policy.describe()}) does not let this patch change {shown}. "
                "No file was changed. Change files inside the writable roots only, or ask the user to "
                "widen the thread's sandbox (echs config ID sandbox=... or writable_roots=...).",
                meta={"sandbox_denied": "patch"},
            )

    return permit
