"""Which tool calls wait for a person, which run, which are refused: one decision table.

Rules are prefixes of a command's argv (``["git", "status"]``) from ``config.toml``'s
``[approval]`` table and from the thread's own ``approval_allow`` / ``approval_deny``; a
one-word rule naming another tool (``["apply_patch"]``) matches that tool's calls. An
``exec_command`` is matched only when it reads as one literal simple command
(``shell_words.py``): ``git status; rm -rf x`` is not ``git status``. A deny rule is
checked against every part of a list or pipeline it can read, and wins over allow.

| thread ``approval`` | asks for | runs without asking |
|---|---|---|
| ``never`` | escalations | everything else |
| ``on-request`` | escalations | everything else |
| ``on-write`` | escalations, calls of tools that write or run commands | read-only tools |
| ``always`` | every call | nothing |

A call an allow rule matches never asks; one a deny rule matches is refused, never asked.
An escalation (a command to run outside the sandbox) skips the question only by a rule of
the thread's own (``approval_allow``: what a person approved for that thread, or set on
it), never by ``config.toml``'s: a daemon-wide ``allow = [["pytest"]]`` must not let the
model run ``pytest`` (and the conftest.py it wrote) unconfined without anyone asked. ``never`` and ``on-request`` differ in what an unanswered request
does: by default it is denied after ``approval_timeout_s`` under ``never``, ``on-write``
and ``always``, and waits as long as it takes under ``on-request`` (``[approval]
on_timeout`` sets it for all).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from echsd.shell_words import commands, simple_command

Prefix = tuple[str, ...]
RUN, ASK, REFUSE = "run", "ask", "refuse"
MAX_RULES = 256
MAX_RULE_WORDS = 32


@dataclass(frozen=True)
class ApprovalRules:
    allow: tuple[Prefix, ...] = ()
    deny: tuple[Prefix, ...] = ()
    escalate: tuple[Prefix, ...] = ()  # allow rules that also let an escalation run unasked

    def __add__(self, other: "ApprovalRules") -> "ApprovalRules":
        return ApprovalRules(self.allow + other.allow, self.deny + other.deny, self.escalate + other.escalate)


ON_TIMEOUT = ("deny", "wait")


@dataclass(frozen=True)
class ApprovalSettings:
    """``config.toml``'s ``[approval]``: rules for every thread, and what a timeout does
    (None: wait under on-request, deny after ``approval_timeout_s`` otherwise)."""

    rules: ApprovalRules = ApprovalRules()
    on_timeout: str | None = None

    def timeout_s(self, policy: str, approval_timeout_s: float) -> float | None:
        """How long a request of a thread with ``policy`` waits before it is denied (None: for ever)."""
        waits = self.on_timeout == "wait" or (self.on_timeout is None and policy == "on-request")
        return None if waits else approval_timeout_s


def approval_from(table: Any, where: str) -> ApprovalSettings:
    """``[approval]``: ``allow``, ``deny`` (command prefixes) and ``on_timeout``."""
    if table is None:
        return ApprovalSettings()
    if not isinstance(table, dict):
        raise ValueError(f"invalid setting 'approval' in {where}: expected a table")
    unknown = sorted(set(table) - {"allow", "deny", "on_timeout"})
    if unknown:
        raise ValueError(f"unknown setting 'approval.{unknown[0]}' in {where}; known: allow, deny, on_timeout")
    on_timeout = table.get("on_timeout")
    if on_timeout is not None and on_timeout not in ON_TIMEOUT:
        raise ValueError(f"invalid setting 'approval.on_timeout' in {where}: expected \"deny\" or \"wait\" (got {on_timeout!r})")
    rules = ApprovalRules(parse_rules(table.get("allow"), f"setting 'approval.allow' in {where}"), parse_rules(table.get("deny"), f"setting 'approval.deny' in {where}"))
    return ApprovalSettings(rules, on_timeout)


@dataclass(frozen=True)
class Decision:
    verdict: str  # run | ask | refuse
    rule: Prefix | None = None  # the rule that decided, if one did

    def explain(self) -> str:
        words = " ".join(self.rule or ())
        return f"refused by the approval rule deny [{words}]" if self.verdict == REFUSE else ""


def argv_of(name: str, args: dict[str, Any]) -> list[str] | None:
    """What allow rules are matched against: a command's argv, or the tool's name."""
    if name != "exec_command":
        return [name]
    command = args.get("cmd")
    return simple_command(command) if isinstance(command, str) else None


def decide(policy: str, *, name: str, writes: bool, args: dict[str, Any], escalated: bool, rules: ApprovalRules) -> Decision:
    denied = _denied_by(name, args, rules.deny)
    if denied is not None:
        return Decision(REFUSE, denied)
    argv = argv_of(name, args)
    allowed = _matching(argv, rules.allow) if argv is not None else None
    if allowed is not None and (not escalated or _matching(argv, rules.escalate) is not None):
        return Decision(RUN, allowed)
    if escalated or policy == "always" or (policy == "on-write" and writes):
        return Decision(ASK)
    return Decision(RUN)


def proposed_rule(name: str, args: dict[str, Any]) -> Prefix | None:
    """What "approve for this thread" adds: the model's ``prefix_rule`` when it is a prefix
    of the command, else the whole command; a tool's name for other tools; None for a
    command that does not read as one simple command."""
    argv = argv_of(name, args)
    if argv is None:
        return None
    suggested = args.get("prefix_rule") if name == "exec_command" else None
    if isinstance(suggested, list) and suggested and all(isinstance(word, str) for word in suggested):
        if tuple(argv[: len(suggested)]) == tuple(suggested):
            return tuple(suggested)
    return tuple(argv[:MAX_RULE_WORDS])


def _denied_by(name: str, args: dict[str, Any], deny: tuple[Prefix, ...]) -> Prefix | None:
    if not deny:
        return None
    command = args.get("cmd") if name == "exec_command" else None
    parts = commands(command) if isinstance(command, str) else [[name]]
    for argv in parts:
        found = _matching(argv, deny) if argv is not None else None
        if found is not None:
            return found
    return None


def _matching(argv: list[str], rules: Iterable[Prefix]) -> Prefix | None:
    for rule in rules:
        if rule and tuple(argv[: len(rule)]) == rule:
            return rule
    return None


def parse_rules(value: Any, where: str) -> tuple[Prefix, ...]:
    """Rules as config gives them: a list of prefixes, each a list of words or a string of
    words separated by spaces (``"git status"``). ValueError naming ``where`` otherwise."""
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)) or len(value) > MAX_RULES:
        raise ValueError(f"{where} must be a list of at most {MAX_RULES} command prefixes")
    rules = []
    for item in value:
        words = item.split() if isinstance(item, str) else item
        if (
            not isinstance(words, (list, tuple))
            or not words
            or len(words) > MAX_RULE_WORDS
            or not all(isinstance(word, str) and word and len(word) <= 256 for word in words)
        ):
            raise ValueError(f"{where}: {item!r} is not a command prefix (a list of words, e.g. [\"git\", \"status\"])")
        rules.append(tuple(words))
    return tuple(dict.fromkeys(rules))
