"""``update_plan``: the model keeps a short step list for the task (Codex's plan tool).

The plan is kept on the thread (``echs show`` prints it, clients get ``plan.updated``); the
tool only checks the shape and hands it to the thread through ``ctx.caps.plan``.
"""

from __future__ import annotations

from typing import Any

from echsd.tools.base import ToolContext, ToolError, ToolResult, ToolSpec

STATUSES = ("pending", "in_progress", "completed")
MAX_STEPS = 50
MAX_TEXT = 500

SPEC = ToolSpec(
    name="update_plan",
    description=(
        "Updates the task plan.\n"
        "Provide an optional explanation and a list of plan items, each with a step and status.\n"
        "At most one step can be in_progress at a time."
    ),
    parameters={
        "type": "object",
        "properties": {
            "explanation": {"type": "string"},
            "plan": {
                "type": "array",
                "description": "The list of steps",
                "items": {
                    "type": "object",
                    "properties": {
                        "step": {"type": "string"},
                        "status": {"type": "string", "description": "One of: pending, in_progress, completed"},
                    },
                    "required": ["step", "status"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["plan"],
        "additionalProperties": False,
    },
    parallel_safe=False,  # two plans in one response: the later one wins, in the model's order
)


def checked_plan(raw: Any) -> list[dict[str, str]]:
    if not isinstance(raw, list) or not raw:
        raise ToolError("plan must be a non-empty list of {step, status}")
    if len(raw) > MAX_STEPS:
        raise ToolError(f"plan has {len(raw)} steps; at most {MAX_STEPS}")
    steps = []
    for index, item in enumerate(raw, start=1):
        if not isinstance(item, dict) or set(item) - {"step", "status"}:
            raise ToolError(f"plan item {index} must be an object with only step and status")
        step, status = item.get("step"), item.get("status")
        if not isinstance(step, str) or not step.strip():
            raise ToolError(f"plan item {index}: step must be a non-empty string")
        if status not in STATUSES:
            raise ToolError(f"plan item {index}: status must be one of {', '.join(STATUSES)} (got {status!r})")
        steps.append({"step": step.strip()[:MAX_TEXT], "status": status})
    if sum(step["status"] == "in_progress" for step in steps) > 1:
        raise ToolError("at most one step can be in_progress at a time")
    return steps


class UpdatePlan:
    spec = SPEC

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        steps = checked_plan(args.get("plan"))
        explanation = args.get("explanation")
        if explanation is not None and not isinstance(explanation, str):
            raise ToolError("explanation must be a string")
        if ctx.caps.plan is None:
            raise ToolError("this thread keeps no plan")
        await ctx.caps.plan.update(explanation[:MAX_TEXT] if explanation else None, steps)
        return ToolResult("Plan updated")
