"""What the model is told of where it works: project instructions and the environment.

Before the first input of a thread, and again before a turn whose facts changed (a new
cwd, sandbox, network or approval setting, another day), the thread's history gets one
user-role message in Codex's shapes: the ``AGENTS.md`` files (``# AGENTS.md instructions
for <cwd>`` around ``<INSTRUCTIONS>``) and an ``<environment_context>`` block with only the
facts that changed. What was last sent is kept with the thread (``sent_record``), so a
restart does not send it again, and a compaction that summarised it away does.

``gather`` does the blocking part (reading the files, the clock); everything else is pure.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from echsd.threads.history import user_message
from echsd.threads.project_docs import ProjectDoc, discover, time_zone
from echsd.tools.process import default_shell

# Our sandbox names, as the model knows them from Codex.
AGENTS_HEADER = "# AGENTS.md instructions for "
ENVIRONMENT_TAG = "<environment_context>"
SANDBOX_MODES = {"full-access": "danger-full-access", "workspace-write": "workspace-write", "read-only": "read-only"}
NO_DOCS = "(no AGENTS.md file applies here any more)"


@dataclass(frozen=True)
class TurnContext:
    env: tuple[tuple[str, str], ...]  # the <environment_context> facts, in order
    docs: tuple[ProjectDoc, ...]
    docs_state: str  # "on", or why not: "off (the thread's project_docs)", "off ([tuning] project_docs)"

    @property
    def cwd(self) -> str:
        return dict(self.env)["cwd"]

    @property
    def docs_digest(self) -> str:
        return hashlib.sha256("\0".join(f"{doc.path}\0{doc.text}" for doc in self.docs).encode()).hexdigest()


def environment(config: Mapping[str, Any], *, shell: str, today: str, zone: str) -> tuple[tuple[str, str], ...]:
    """The facts of a thread's config the model works under. Keys a config does not have yet
    (``sandbox``, ``network``, ``writable_roots``) read as what holds without them."""
    facts = [
        ("cwd", str(config["cwd"])),
        ("shell", shell),
        ("current_date", today),
        ("timezone", zone),
        ("sandbox_mode", SANDBOX_MODES.get(str(config.get("sandbox", "full-access")), str(config.get("sandbox")))),
        ("network_access", "restricted" if config.get("network") in ("off", False) else "enabled"),
        ("approval_policy", str(config.get("approval", "never"))),
    ]
    roots = config.get("writable_roots") or ()
    if roots:
        facts.append(("writable_roots", " ".join(str(root) for root in roots)))
    return tuple(facts)


def gather(config: Mapping[str, Any], *, docs_wanted: str, user_doc: Path | None, max_bytes: int) -> TurnContext:
    """Blocking (files, clock): run it off the event loop. ``docs_wanted`` is "on" or why not."""
    env = environment(config, shell=Path(default_shell()).name, today=time.strftime("%Y-%m-%d"), zone=time_zone())
    docs = discover(str(config["cwd"]), user_doc, max_bytes) if docs_wanted == "on" else ()
    return TurnContext(env, docs, docs_wanted)


def sent_record(context: TurnContext) -> dict[str, Any]:
    """What the thread keeps of the last context sent: the facts, the digest of the files, and
    the list ``echs show`` prints."""
    return {
        "env": dict(context.env),
        "docs_digest": context.docs_digest,
        "project_docs": [doc.describe() for doc in context.docs],
        "project_docs_state": context.docs_state,
    }


def context_message(context: TurnContext, sent: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The user message to send before the next input, or None when nothing changed."""
    parts = []
    loaded = [doc for doc in context.docs if doc.text]
    before = (sent or {}).get("project_docs") or []
    if (sent is None or sent.get("docs_digest") != context.docs_digest) and (loaded or before):
        parts.append(agents_text(context.cwd, loaded))
    previous = (sent or {}).get("env") or {}
    changed = [(key, value) for key, value in context.env if previous.get(key) != value]
    if changed:
        parts.append(environment_text(changed))
    if not parts:
        return None
    message = user_message(parts[0])
    message["content"] = [{"type": "input_text", "text": text} for text in parts]
    return message


def agents_text(cwd: str, docs: list[ProjectDoc]) -> str:
    """Codex's shape; each file's text follows a comment naming it (its rules cover its directory)."""
    body = "\n\n".join(f"<!-- {doc.path} -->\n{doc.text.rstrip()}" for doc in docs) if docs else NO_DOCS
    return f"{AGENTS_HEADER}{cwd}\n\n<INSTRUCTIONS>\n{body}\n</INSTRUCTIONS>"


def environment_text(facts: list[tuple[str, str]]) -> str:
    lines = "\n".join(f"  <{key}>{_escaped(value)}</{key}>" for key, value in facts)
    return f"{ENVIRONMENT_TAG}\n{lines}\n</environment_context>"


def _escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def is_context_message(item: dict[str, Any]) -> bool:
    """A user-role message that carries context, not something the user typed."""
    if item.get("type") != "message" or item.get("role") != "user" or not isinstance(item.get("content"), list):
        return False
    first = item["content"][0] if item["content"] else None
    text = first.get("text") if isinstance(first, dict) else None
    return isinstance(text, str) and text.startswith((AGENTS_HEADER, ENVIRONMENT_TAG))
