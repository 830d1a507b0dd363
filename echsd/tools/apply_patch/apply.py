"""Parse, plan, then commit (or only describe) a patch: the applier's one entry point."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from echsd.tools.apply_patch.commit import commit
from echsd.tools.apply_patch.parser import parse_patch
from echsd.tools.apply_patch.plan import FileChange, plan_patch
from echsd.tools.apply_patch.report import dry_run_report, summary
from echsd.tools.apply_patch.view import FileView


@dataclass(frozen=True)
class PatchOutcome:
    changes: tuple[FileChange, ...]
    dry_run: bool

    def text(self) -> str:
        """What the model reads: Codex's success summary, or for a dry run the diff."""
        return dry_run_report(self.changes) if self.dry_run else summary(self.changes)


def apply_patch(
    text: str, view: FileView, *, dry_run: bool = False, permit: Callable[[Iterable[str]], None] | None = None
) -> PatchOutcome:
    """Apply ``text`` to ``view`` all-or-nothing; with ``dry_run`` write nothing at all.

    Raises ``PatchParseError`` or ``PatchApplyError`` (both ``PatchError``) with a message
    for the model; in either case no file has changed. ``permit`` sees every path the patch
    would change before anything is written, and may refuse by raising.
    """
    plan = plan_patch(parse_patch(text), view)
    if permit is not None:
        permit(plan.final)
    if not dry_run:
        commit(view, plan.final)
    return PatchOutcome(plan.changes, dry_run)
