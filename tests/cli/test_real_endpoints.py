"""Today's models and a real repository, as a new user meets them: ``echsd serve`` against
``echsd mock-upstream`` over real HTTP, the real ``echs``, and the requests the mock logged.

- gpt-6.1-sol (Codex 0.169's default) and gpt-6.9-test (a name only the endpoint's
  ``/models`` lists) run tool turns: reasoning and ``include`` are sent, the encrypted
  reasoning item is carried into the follow-up, a refused one is dropped once and the thread
  goes on; the command ran in a login shell.
- The user's, the repository root's and the cwd's ``AGENTS.md`` reach the first request in
  that order with an environment context; a cwd change is told once.
- A refused reasoning summary costs one 400 per daemon: two threads, a sub-agent and a
  restart ask once in all.
- On the ChatGPT backend (``--provider codex``): Codex's headers, and ``chain=true`` refused
  when configured and when sending on a thread chained elsewhere, before any request.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.cli.helpers import ECHSD, MockProcess, Serve, clean_env, echs, mock_upstream_process, new_thread
from tests.helpers import mock_directive

LOGIN_PROBE = "echo hi; shopt -q login_shell && echo LOGIN-SHELL"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, MockProcess, Serve]]:
    """A home with the user's AGENTS.md, a git repository with rules at its root and in
    ``services/api``, a mock endpoint that lists gpt-6.9-test, and a daemon using it."""
    home = tmp_path_factory.mktemp("site")
    (home / ".config" / "echsd").mkdir(parents=True)
    (home / ".config" / "echsd" / "AGENTS.md").write_text("USER-RULES-0: answer briefly.\n")
    repo = home / "repo"
    (repo / "services" / "api").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "AGENTS.md").write_text("# Repo rules\nROOT-RULES-1: run make test.\n")
    (repo / "services" / "api" / "AGENTS.md").write_text("# API rules\nSUB-RULES-2: use trio.\n")
    state = home / "state"
    state.mkdir()
    with mock_upstream_process(home, {"models": ["gpt-6.9-test"]}) as mock:
        daemon = Serve(state, "--provider", "openai", "--base-url", mock.url)
        try:
            yield repo, mock, daemon
        finally:
            daemon.terminate()


def sent_by(mock: MockProcess, tid: str) -> list[dict[str, Any]]:
    """The thread's model requests, in order (the thread id travels in ``thread-id``)."""
    return [r for r in mock.requests() if r["path"].endswith("/responses") and r["headers"].get("thread-id") == tid]


def kinds(request: dict[str, Any]) -> list[str]:
    return [item["type"] for item in request["body"]["input"]]


def texts(item: dict[str, Any]) -> list[str]:
    return [part["text"] for part in item["content"]]


def context_items(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The user-role messages echsd adds: AGENTS.md files and the environment context."""
    return [
        item for item in request["body"]["input"]
        if item.get("role") == "user" and texts(item)[0].startswith(("# AGENTS.md instructions for ", "<environment_context>"))
    ]


def send(state: Path, tid: str, text: str) -> str:
    result = echs(state, "send", tid, text, "--wait")
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("model, verbosity", [("gpt-6.1-sol", {"verbosity": "low"}), ("gpt-6.9-test", {"verbosity": "low"})])
def test_gpt6_models_run_tool_turns_and_a_refused_reasoning_item_is_repaired_once(
    site: tuple[Path, MockProcess, Serve], model: str, verbosity: dict[str, str]
) -> None:
    repo, mock, daemon = site
    daemon.wait_logged('"model list fetched"')
    tid = new_thread(daemon.state_dir, "--model", model, "--cwd", str(repo))
    script = [
        {"reasoning": f"plan for {model}", "calls": [{"name": "exec_command", "arguments": {"cmd": LOGIN_PROBE}}]},
        {"text": "after the repair", "fault": "invalid_encrypted_content", "times": 1},
    ]
    assert send(daemon.state_dir, tid, f"run it\n{mock_directive(script)}") == "after the repair\n"
    first, refused, resent = sent_by(mock, tid)
    for request in (first, refused, resent):
        body = request["body"]
        assert body["model"] == model and body["store"] is False and body["text"] == verbosity
        assert body["reasoning"]["effort"] and body["include"] == ["reasoning.encrypted_content"]
    assert kinds(refused)[-3:] == ["reasoning", "function_call", "function_call_output"]
    [reasoning] = [item for item in refused["body"]["input"] if item["type"] == "reasoning"]
    assert reasoning["encrypted_content"].startswith(f"mockenc:{model}:")  # carried over as the model made it
    output = refused["body"]["input"][-1]["output"]
    assert "hi\nLOGIN-SHELL" in output  # exec_command runs a login shell by default
    assert kinds(resent) == [kind for kind in kinds(refused) if kind != "reasoning"]  # dropped once, resent

    assert send(daemon.state_dir, tid, "and on") == "mock reply to: and on\n"  # the thread goes on
    requests = sent_by(mock, tid)
    assert len(requests) == 4 and "reasoning" not in kinds(requests[-1])

    listed = json.loads(echs(daemon.state_dir, "show", tid, "--json").stdout)["config"]
    assert listed["model"] == model


def test_echsd_models_names_the_endpoint_as_a_source(site: tuple[Path, MockProcess, Serve]) -> None:
    _repo, _mock, daemon = site
    daemon.wait_logged('"model list fetched"')
    result = subprocess.run(
        [ECHSD, "models", "--state-dir", str(daemon.state_dir), "--json"],
        env=clean_env(daemon.state_dir.parent), capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 0, result.stderr
    models = {entry["model"]: entry for entry in json.loads(result.stdout)}
    assert models["gpt-6.9-test"]["source"] == "family gpt-6+endpoint" and models["gpt-6.9-test"]["reasoning"] is True
    assert models["gpt-6.1-sol"]["default_for"] == ["openai", "codex"]


def test_agents_md_and_the_environment_come_first_and_a_new_cwd_is_told_once(site: tuple[Path, MockProcess, Serve]) -> None:
    repo, mock, daemon = site
    sub = repo / "services" / "api"
    tid = new_thread(daemon.state_dir, "--cwd", str(sub))
    send(daemon.state_dir, tid, "first")
    [first] = sent_by(mock, tid)
    context, typed = first["body"]["input"]
    assert texts(typed) == ["first"]
    agents, environment = texts(context)
    assert agents.startswith(f"# AGENTS.md instructions for {sub}\n\n<INSTRUCTIONS>")
    assert agents.index("USER-RULES-0") < agents.index("ROOT-RULES-1") < agents.index("SUB-RULES-2")  # user, root, cwd
    assert environment.startswith(f"<environment_context>\n  <cwd>{sub}</cwd>\n  <shell>bash</shell>\n  <current_date>")
    assert "<sandbox_mode>workspace-write</sandbox_mode>" in environment and "<approval_policy>never</approval_policy>" in environment

    send(daemon.state_dir, tid, "second")
    assert len(context_items(sent_by(mock, tid)[-1])) == 1  # nothing changed, nothing told again

    configured = echs(daemon.state_dir, "config", tid, f"cwd={repo}")
    assert configured.returncode == 0, configured.stderr
    send(daemon.state_dir, tid, "third")
    third = sent_by(mock, tid)[-1]
    assert len(context_items(third)) == 2 and texts(third["body"]["input"][-1]) == ["third"]
    agents, environment = texts(context_items(third)[-1])
    assert environment == f"<environment_context>\n  <cwd>{repo}</cwd>\n</environment_context>"  # only what changed
    assert "ROOT-RULES-1" in agents and "SUB-RULES-2" not in agents
    send(daemon.state_dir, tid, "fourth")
    assert len(context_items(sent_by(mock, tid)[-1])) == 2  # told once

    configured = echs(daemon.state_dir, "config", tid, "sandbox=read-only", "approval=on-request")
    assert configured.returncode == 0, configured.stderr
    send(daemon.state_dir, tid, "fifth")
    fifth = sent_by(mock, tid)[-1]
    assert len(context_items(fifth)) == 3
    assert texts(context_items(fifth)[-1]) == [
        "<environment_context>\n  <sandbox_mode>read-only</sandbox_mode>\n  <approval_policy>on-request</approval_policy>\n</environment_context>"
    ]  # the new policy alone: the rules did not change


def asked_summaries(mock: MockProcess) -> list[dict[str, Any]]:
    return [r for r in mock.requests() if r["path"].endswith("/responses") and "summary" in (r["body"].get("reasoning") or {})]


def test_a_refused_summary_costs_one_400_per_daemon(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    model = "gpt-5.4"  # its catalog entry asks for a summary (Codex 0.169's current models ask none)
    with mock_upstream_process(tmp_path, {"endpoint": {"org_verified": False}}) as mock:
        daemon = Serve(state, "--provider", "openai", "--base-url", mock.url)
        first = new_thread(state, "--model", model, "--cwd", str(tmp_path))
        assert send(state, first, "hello") == "mock reply to: hello\n"
        assert len(asked_summaries(mock)) == 1  # refused with the API's 400, resent without
        assert "summary" not in sent_by(mock, first)[-1]["body"]["reasoning"]

        second = new_thread(state, "--model", model, "--cwd", str(tmp_path))
        child = mock_directive({"text": "child done"})
        script = [{"calls": [{"name": "spawn_agent", "arguments": {"message": child}}]}, {"calls": [{"name": "wait_agents", "arguments": {}}]}, {"text": "parent done"}]
        assert send(state, second, f"split it\n{mock_directive(script)}") == "parent done\n"
        children = [r for r in mock.requests() if r["headers"].get("thread-id") not in (first, second)]
        assert children and all(r["body"]["model"] == model for r in children)
        assert len(asked_summaries(mock)) == 1  # neither the second thread nor its sub-agent asked
        assert daemon.terminate() == 0

        daemon = Serve(state, "--provider", "openai", "--base-url", mock.url)  # a new process remembers it
        assert send(state, first, "after a restart") == "mock reply to: after a restart\n"
        assert len(asked_summaries(mock)) == 1
        daemon.terminate()


def test_the_chatgpt_backend_gets_codex_headers_and_no_chain(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    (codex_home / "auth.json").write_text(json.dumps({"tokens": {"access_token": "tok-abc", "refresh_token": "r", "account_id": "acct_1"}}))
    env = clean_env(tmp_path, CODEX_HOME=str(codex_home))
    state = tmp_path / "state"
    state.mkdir()
    with mock_upstream_process(tmp_path) as mock:
        api = Serve(state, "--provider", "openai", "--base-url", mock.url, env=env)
        chained = new_thread(state, "--cwd", str(tmp_path))
        assert echs(state, "config", chained, "chain=true", env=env).returncode == 0  # fine where responses are stored
        assert api.terminate() == 0

        backend = Serve(state, "--provider", "codex", "--base-url", mock.backend, env=env)
        tid = new_thread(state, "--cwd", str(tmp_path))
        refused = echs(state, "config", tid, "chain=true", env=env)
        assert refused.returncode != 0 and "ChatGPT backend (provider codex)" in refused.stderr and "Traceback" not in refused.stderr
        refused = echs(state, "send", chained, "hello", "--wait", env=env)
        assert refused.returncode == 1 and "use chain=false" in refused.stderr, refused.stderr
        assert sent_by(mock, chained) == []  # refused before any request, nothing stored
        assert json.loads(echs(state, "history", chained, "--json", env=env).stdout) == []

        assert echs(state, "send", tid, "hello", "--wait", env=env).stdout == "mock reply to: hello\n"
        [request] = sent_by(mock, tid)
        headers, body = request["headers"], request["body"]
        assert request["path"] == "/backend-api/codex/responses" and body["store"] is False and "previous_response_id" not in body
        assert headers["session-id"] == headers["thread-id"] == tid and "session_id" not in headers
        assert headers["version"] == "0.169.0" and headers["originator"] == "codex_cli_rs" and headers["chatgpt-account-id"] == "acct_1"
        assert body["model"] == "gpt-6.1-sol" and headers["x-codex-routing-hint"] == "model=gpt-6.1-sol"
        backend.terminate()
