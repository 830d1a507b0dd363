"""A child thread's policy is never looser than its parent's (sans-IO): the one rule, for
``thread.create {parent}`` (``echs new --parent``) and ``spawn_agent`` alike.

``POLICY_ORDERS`` lists each policy key's values from loosest to strictest (``writes``,
``approval``, the sandbox's ``sandbox`` and ``network``); every way of making a child
follows it. ``writable_roots`` is a set: a child's must be among its parent's. Of the
thread's approval rules, a child keeps every ``approval_deny`` prefix of its parent's (it may
add more), and its ``approval_allow`` must be among its parent's; it does not inherit them
("approve for this thread" is that thread's own).

- A key the caller does not give is the parent's value (not the daemon's default).
- A value looser than the parent's is refused with ``bad_request``, unless the caller says
  so explicitly: ``thread.create {parent, loosen_policy: true}`` (``echs new --parent P
  --loosen-policy``). The model never can: ``spawn_agent`` takes the stricter of what it
  asks and what its parent has.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from echsd.approval_rules import parse_rules
from echsd.errors import BadRequest
from echsd.sandbox_modes import MODES, NETWORK
from echsd.threads.config import APPROVALS, WRITES, ThreadConfig

POLICY_ORDERS: dict[str, tuple[str, ...]] = {  # loosest first
    "writes": WRITES,
    "approval": APPROVALS,
    "sandbox": MODES,
    "network": NETWORK,
}


def stricter(key: str, first: str, second: str) -> str:
    """The stricter of two values of policy ``key``."""
    order = POLICY_ORDERS[key]
    return first if order.index(first) >= order.index(second) else second


def is_looser(key: str, value: Any, than: Any) -> bool:
    order = POLICY_ORDERS[key]
    return value in order and than in order and order.index(value) < order.index(than)


def child_policy(asked: Mapping[str, Any], parent: ThreadConfig, *, loosen: bool = False) -> dict[str, Any]:
    """The policy keys of a new child's config: each as ``asked``, else the parent's. A value
    looser than the parent's raises ``BadRequest`` unless ``loosen``. (A value that is not
    valid at all is left for the config's own check to refuse.)"""
    policy: dict[str, Any] = {}
    for key in POLICY_ORDERS:
        inherited = getattr(parent, key)
        value = asked.get(key)
        if value is None:
            policy[key] = inherited
            continue
        if is_looser(key, value, inherited) and not loosen:
            raise BadRequest(
                f"{key}={value} is looser than the parent's {key}={inherited}; a child's policy is never looser "
                "than its parent's unless asked explicitly (loosen_policy: true, echs new --loosen-policy)"
            )
        policy[key] = value
    roots, inherited_roots = asked.get("writable_roots"), list(parent.writable_roots)
    if roots is None:
        policy["writable_roots"] = inherited_roots
    elif not loosen and (extra := sorted(set(_root_list(roots)) - set(inherited_roots))):
        raise BadRequest(
            f"writable_roots {', '.join(extra)} are not among the parent's; a child's policy is never looser than its "
            "parent's unless asked explicitly (loosen_policy: true, echs new --loosen-policy)"
        )
    policy.update(_child_rules(asked, parent, loosen))
    return policy


def _child_rules(asked: Mapping[str, Any], parent: ThreadConfig, loosen: bool) -> dict[str, Any]:
    """A child's ``approval_deny`` (its parent's and any it asks for) and a check of the
    ``approval_allow`` it asks for; with ``loosen``, both as asked."""
    if loosen:
        return {}
    try:
        allow, deny = _rule_list(asked.get("approval_allow")), _rule_list(asked.get("approval_deny"))
    except ValueError:
        return {}  # not valid at all: the config's own check refuses it
    if extra := [" ".join(rule) for rule in allow if rule not in parent.approval_allow]:
        raise BadRequest(
            f"approval_allow {', '.join(extra)} are not among the parent's; a child's policy is never looser than its "
            "parent's unless asked explicitly (loosen_policy: true, echs new --loosen-policy)"
        )
    return {"approval_deny": [list(rule) for rule in dict.fromkeys((*parent.approval_deny, *deny))]}


def _rule_list(rules: Any) -> tuple[tuple[str, ...], ...]:
    """Approval rules as given (a list, or a comma-separated string); ValueError if not rules."""
    if isinstance(rules, str):
        rules = [part for part in rules.split(",") if part.strip()]
    return parse_rules(rules, "rules")


def _root_list(roots: Any) -> list[str]:
    """``writable_roots`` as given (a list, or a comma-separated string); the config checks the rest."""
    if isinstance(roots, str):
        roots = [part for part in roots.split(",") if part.strip()]
    return [os.path.normpath(os.path.expanduser(str(root).strip())) for root in roots] if isinstance(roots, (list, tuple)) else []
