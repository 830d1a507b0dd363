"""The approval decision table (``echsd/approval_rules.py``), every row, and the rules."""

from __future__ import annotations

import pytest

from echsd.approval_rules import ASK, REFUSE, RUN, ApprovalRules, ApprovalSettings, approval_from, decide, parse_rules, proposed_rule

NONE = ApprovalRules()


@pytest.mark.parametrize(
    ("policy", "writes", "escalated", "verdict"),
    [
        ("never", True, False, RUN),
        ("never", True, True, ASK),
        ("on-request", True, False, RUN),
        ("on-request", False, True, ASK),
        ("on-write", False, False, RUN),
        ("on-write", True, False, ASK),
        ("on-write", True, True, ASK),
        ("always", False, False, ASK),
    ],
)
def test_the_policy_table(policy: str, writes: bool, escalated: bool, verdict: str) -> None:
    assert decide(policy, name="exec_command", writes=writes, args={"cmd": "ls"}, escalated=escalated, rules=NONE).verdict == verdict


def test_allow_rules_skip_the_question_and_the_threads_own_also_for_escalations() -> None:
    rules = ApprovalRules(allow=(("npm", "install"),))
    thread = ApprovalRules(allow=(("npm", "install"),), escalate=(("npm", "install"),))
    for policy, escalated in (("always", False), ("on-write", False), ("on-request", True), ("never", True)):
        decision = decide(policy, name="exec_command", writes=True, args={"cmd": "npm install left-pad"}, escalated=escalated, rules=thread)
        assert (decision.verdict, decision.rule) == (RUN, ("npm", "install"))
        decision = decide(policy, name="exec_command", writes=True, args={"cmd": "npm install left-pad"}, escalated=escalated, rules=rules)
        assert decision.verdict == (ASK if escalated else RUN)  # config.toml's rules never let a command out unasked
    compound = decide("always", name="exec_command", writes=True, args={"cmd": "npm install; curl x | sh"}, escalated=False, rules=rules)
    assert compound.verdict == ASK


def test_deny_rules_refuse_under_every_policy_and_win_over_allow() -> None:
    rules = ApprovalRules(allow=(("git",),), deny=(("git", "push"), ("rm",)))
    for policy in ("never", "on-request", "on-write", "always"):
        for cmd in ("git push origin main", "make && rm -rf build", "echo 'x;y' | rm -f z"):
            decision = decide(policy, name="exec_command", writes=True, args={"cmd": cmd}, escalated=False, rules=rules)
            assert decision.verdict == REFUSE, (policy, cmd)
    assert "deny [git push]" in decide("never", name="exec_command", writes=True, args={"cmd": "git push"}, escalated=False, rules=rules).explain()
    assert decide("always", name="exec_command", writes=True, args={"cmd": "git log"}, escalated=False, rules=rules).verdict == RUN


def test_a_one_word_rule_names_another_tool() -> None:
    rules = ApprovalRules(allow=(("apply_patch",),), deny=(("spawn_agent",),))
    assert decide("on-write", name="apply_patch", writes=True, args={"input": "..."}, escalated=False, rules=rules).verdict == RUN
    assert decide("never", name="spawn_agent", writes=False, args={}, escalated=False, rules=rules).verdict == REFUSE


def test_the_rule_approving_for_the_thread_adds() -> None:
    assert proposed_rule("exec_command", {"cmd": "npm install x", "prefix_rule": ["npm", "install"]}) == ("npm", "install")
    assert proposed_rule("exec_command", {"cmd": "npm install x", "prefix_rule": ["rm"]}) == ("npm", "install", "x")  # not a prefix: ignored
    assert proposed_rule("exec_command", {"cmd": "make; make install"}) is None
    assert proposed_rule("apply_patch", {"input": "..."}) == ("apply_patch",)


def test_rules_and_settings_are_checked() -> None:
    assert parse_rules(["git status", ["pytest", "-q"], "git status"], "x") == (("git", "status"), ("pytest", "-q"))
    for bad in ("git", [[]], [["ok", 3]], [""], ["x"] * 300):
        with pytest.raises(ValueError):
            parse_rules(bad, "x")
    settings = approval_from({"allow": ["ls"], "on_timeout": "wait"}, "config.toml")
    assert settings.rules.allow == (("ls",),) and settings.timeout_s("always", 600.0) is None
    assert ApprovalSettings().timeout_s("on-request", 600.0) is None and ApprovalSettings().timeout_s("never", 600.0) == 600.0
    assert ApprovalSettings(on_timeout="deny").timeout_s("on-request", 5.0) == 5.0
    for bad in ({"on_timeout": "maybe"}, {"allowed": []}, ["x"]):
        with pytest.raises(ValueError):
            approval_from(bad, "config.toml")
