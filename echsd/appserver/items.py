"""ThreadItems of the app-server protocol, built from echsd's records (sans-IO).

Responses items (user and assistant messages, reasoning) map one to one. Tool calls are
described from their ``tool.started`` event, when the call runs: ``exec_command`` becomes
a ``commandExecution`` item (and a shell ``apply_patch <<EOF`` a ``fileChange``, as Codex
intercepts it), ``apply_patch`` a ``fileChange`` whose changes are read from the patch,
``view_image`` an ``imageView``, the sub-agent tools ``collabAgentToolCall`` items (see
``agents``), and any other tool a ``dynamicToolCall``.

A command still running when ``exec_command`` returns (an exec session, Codex's unified
exec) keeps its item in progress, marked with its ``processId`` and the source
``unifiedExecStartup``; ``write_stdin`` output adds to it, and it completes when the
process exits or is killed (see ``sessions``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from echsd.appserver.described import described_command, described_patch, join_path
from echsd.threads.context import is_context_message

OUTPUT_MARKER = "\nOutput:\n"  # exec_command's result text: status lines, then the output
SHOWN_OTHERWISE = frozenset({"update_plan", "write_stdin"})  # a plan update; a session's interaction
SESSION_OUTPUT_CHARS = 64 * 1024  # of a session's output, its item keeps the last this many


def user_message(item_id: str, item: dict[str, Any], client_id: str | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for part in _parts(item):
        kind = part.get("type")
        if kind == "input_text" and isinstance(part.get("text"), str):
            content.append({"type": "text", "text": part["text"], "text_elements": []})
        elif kind == "input_image" and isinstance(part.get("image_url"), str):
            content.append({"type": "image", "url": part["image_url"]})
    return {"type": "userMessage", "id": item_id, "clientId": client_id, "content": content}


def agent_message(item_id: str, text: str) -> dict[str, Any]:
    return {"type": "agentMessage", "id": item_id, "text": text}


def message_text(item: dict[str, Any]) -> str:
    """The text of a Responses assistant message (its output_text and refusal parts)."""
    texts = [part.get("text") or part.get("refusal") or "" for part in _parts(item)]
    return "".join(text for text in texts if isinstance(text, str))


def reasoning(item_id: str, summary: list[str]) -> dict[str, Any]:
    return {"type": "reasoning", "id": item_id, "summary": summary, "content": []}


def reasoning_summary(item: dict[str, Any]) -> list[str]:
    parts = item.get("summary") if isinstance(item.get("summary"), list) else []
    return [part["text"] for part in parts if isinstance(part, dict) and isinstance(part.get("text"), str)]


def is_user_message(item: dict[str, Any]) -> bool:
    """A message the user sent (not the project instructions and environment echsd tells the
    model before it, which Codex's clients do not show either)."""
    return item.get("type") == "message" and item.get("role") == "user" and not is_context_message(item)


def is_assistant_message(item: dict[str, Any]) -> bool:
    return item.get("type") == "message" and item.get("role") == "assistant"


def _parts(item: dict[str, Any]) -> list[dict[str, Any]]:
    content = item.get("content")
    if isinstance(content, str):
        return [{"type": "input_text" if item.get("role") == "user" else "output_text", "text": content}]
    return [part for part in content if isinstance(part, dict)] if isinstance(content, list) else []


@dataclass
class ToolCall:
    """A running (or finished) tool call, as the protocol shows it."""

    call_id: str
    kind: str  # commandExecution | fileChange | imageView | dynamicToolCall
    name: str
    arguments: Any
    cwd: str  # where it runs (for imageView: the image's path)
    command: str = ""  # the argv echsd runs, quoted (clients show the script of ``bash -c``)
    script: str = ""
    changes: list[dict[str, Any]] = field(default_factory=list)
    status: str = "inProgress"
    exit_code: int | None = None
    output: str | None = None
    duration_ms: int | None = None
    process_id: str | None = None  # the exec session, once the call returned with one running
    source: str = "agent"

    def finish(self, data: dict[str, Any]) -> None:
        """Apply ``tool.completed``: status, exit code, output, duration; a command left
        running in a session stays in progress (``process_id`` says which)."""
        self.output = output_of(data)
        if self.kind == "commandExecution" and isinstance(data.get("session_id"), int):
            self.process_id, self.source = str(data["session_id"]), "unifiedExecStartup"
            return
        if data.get("approval") in ("deny", "timeout"):
            self.status = "declined"
        else:
            self.status = "completed" if data.get("ok") else "failed"
        exit_code = data.get("exit_code")
        self.exit_code = exit_code if isinstance(exit_code, int) else None
        duration = data.get("duration_ms")
        self.duration_ms = int(duration) if isinstance(duration, (int, float)) else None

    def add_output(self, text: str | None) -> None:
        """More output of a session's command (what a ``write_stdin`` call returned)."""
        if text:
            self.output = ((self.output or "") + text)[-SESSION_OUTPUT_CHARS:]

    def end(self, exit_code: int | None, duration_ms: int) -> None:
        """A session's command is over: exited (``exit_code``), or killed (None)."""
        self.status = "completed" if exit_code == 0 else "failed"
        self.exit_code, self.duration_ms = exit_code, duration_ms

    def abandon(self) -> None:
        """The turn ended while the call ran (interrupt, error)."""
        if self.status == "inProgress":
            self.status = "failed"

    def item(self) -> dict[str, Any]:
        if self.kind == "imageView":
            return {"type": "imageView", "id": self.call_id, "path": self.cwd}
        if self.kind == "commandExecution":
            return {
                "type": "commandExecution",
                "id": self.call_id,
                "command": self.command,
                "cwd": self.cwd,
                "status": self.status,
                "commandActions": [{"type": "unknown", "command": self.script}],
                "aggregatedOutput": self.output,
                "exitCode": self.exit_code,
                "durationMs": self.duration_ms,
                "processId": self.process_id,
                "source": self.source,
            }
        if self.kind == "fileChange":
            return {"type": "fileChange", "id": self.call_id, "changes": self.changes, "status": self.status}
        status = "failed" if self.status == "declined" else self.status
        return {
            "type": "dynamicToolCall",
            "id": self.call_id,
            "tool": self.name,
            "arguments": self.arguments,
            "status": status,
            "success": None if status == "inProgress" else status == "completed",
            "contentItems": None if self.output is None else [{"type": "inputText", "text": self.output}],
            "durationMs": self.duration_ms,
        }


def output_of(data: dict[str, Any]) -> str | None:
    """The output of a ``tool.completed`` without exec's status lines."""
    output = data.get("output")
    if not isinstance(output, str):
        return None
    head, marker, body = output.partition(OUTPUT_MARKER)
    return body if marker else output


def approval_request(
    thread_uuid: str, data: Mapping[str, Any], call: Any, cwd: str, ms: int
) -> tuple[str, dict[str, Any]]:
    """The server request (method, params) asking a client to decide an echsd approval."""
    base = {
        "threadId": thread_uuid,
        "turnId": str(data.get("turn_id") or ""),
        "itemId": str(data.get("call_id") or ""),
        "startedAtMs": ms,
    }
    summary = str(data.get("summary") or data.get("tool") or "")
    if call is not None and call.kind == "fileChange":
        return "item/fileChange/requestApproval", {**base, "reason": summary}
    if isinstance(call, ToolCall) and call.kind == "commandExecution":
        command, script, where = call.command, call.script, call.cwd
    else:
        command, script, where = summary, summary, cwd
    params = {**base, "command": command, "cwd": where, "commandActions": [{"type": "unknown", "command": script}]}
    arguments = data.get("arguments") if isinstance(data.get("arguments"), dict) else {}
    if str(data.get("summary") or "").startswith("outside the sandbox: "):  # an escalation
        params["reason"] = str(arguments.get("justification") or "run this command outside the sandbox")
    if isinstance(data.get("rule"), list):
        params["proposedExecpolicyAmendment"] = [str(word) for word in data["rule"]]
    return "item/commandExecution/requestApproval", params


def tool_call(call_id: str, name: str, arguments: Any, cwd: str) -> ToolCall | None:
    """Describe a call from its ``tool.started`` event (``cwd``: the thread's); None for a
    call that is shown otherwise (``update_plan``: as ``turn/plan/updated``; ``write_stdin``:
    as its session's interaction)."""
    if name in SHOWN_OTHERWISE:
        return None
    args = arguments if isinstance(arguments, dict) else {}
    if name == "view_image" and isinstance(args.get("path"), str):
        return ToolCall(call_id, "imageView", name, arguments, join_path(cwd, args["path"]))
    if name == "exec_command" and isinstance(args.get("cmd"), str):
        workdir = join_path(cwd, args["workdir"]) if isinstance(args.get("workdir"), str) else cwd
        kind, where, changes, command = described_command(args["cmd"], workdir)
        return ToolCall(call_id, kind, name, arguments, where, command=command, script=args["cmd"], changes=changes)
    if name == "apply_patch":
        text = args.get("input") if isinstance(args.get("input"), str) else arguments if isinstance(arguments, str) else ""
        return ToolCall(call_id, "fileChange", name, arguments, cwd, changes=described_patch(text, cwd))
    return ToolCall(call_id, "dynamicToolCall", name, arguments, cwd)

