"""``GET /metrics`` (on ``--metrics`` and on the web listener): valid Prometheus text, as
``prometheus_client``'s own parser reads it, with every family the daemon promises, labels
that never name a thread, and counters that move when a turn runs."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from echsd.tools.sandbox import landlock
from tests.helpers import Watch, make_settings, mock_directive
from tests.web.conftest import origin_of

FAMILIES = {
    "echsd_threads": "gauge",
    "echsd_turns_started": "counter",
    "echsd_turns_finished": "counter",
    "echsd_turns_interrupted": "counter",
    "echsd_turn_errors": "counter",
    "echsd_tokens": "counter",
    "echsd_cost_usd": "counter",
    "echsd_tool_calls": "counter",
    "echsd_tool_call_duration_seconds": "histogram",
    "echsd_model_request_duration_seconds": "histogram",
    "echsd_model_time_to_first_token_seconds": "histogram",
    "echsd_model_retries": "counter",
    "echsd_store_commit_batch_units": "histogram",
    "echsd_store_commit_batch_events": "histogram",
    "echsd_store_commit_duration_seconds": "histogram",
    "echsd_subscriber_backlog_events": "gauge",
    "echsd_subscriber_backlog_bytes": "gauge",
    "echsd_subscriber_dropped_events": "counter",
    "echsd_subscriber_gaps": "counter",
    "echsd_approvals_pending": "gauge",
    "echsd_approvals_requested": "counter",
    "echsd_approvals_resolved": "counter",
    "echsd_hook_deliveries": "counter",
    "echsd_sandbox_denials": "counter",
}
LEASE_FAMILIES = ("echsd_cluster_lease_seconds", "echsd_cluster_lease_renewed_seconds_ago", "echsd_cluster_lease_ok")
IDS = re.compile(r"(thr|turn|call|in|apr)_[0-9a-f]{8,}")


async def scrape(url: str) -> dict[str, Any]:
    async with httpx.AsyncClient() as http:
        answer = await http.get(url)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    return {family.name: family for family in text_string_to_metric_families(answer.text)}


def value(families: dict[str, Any], sample_name: str, **labels: str) -> float:
    family = families[sample_name.removesuffix("_total").removesuffix("_count").removesuffix("_sum")]
    return sum(s.value for s in family.samples if s.name == sample_name and all(s.labels.get(k) == v for k, v in labels.items()))


async def test_metrics_are_valid_prometheus_text_with_every_family(web_daemon: Any) -> None:
    for url in (web_daemon.metrics_url, origin_of(web_daemon) + "/metrics"):  # --metrics alone, and the web listener
        families = await scrape(url)
        for name, kind in FAMILIES.items():
            assert name in families, f"{name} missing at {url}"
            assert families[name].type == kind, name
        if web_daemon.store.dialect == "postgresql":
            assert all(name in families for name in LEASE_FAMILIES)
        assert value(families, "echsd_threads", state="idle") == 0


async def test_counters_move_when_a_turn_runs(web_daemon: Any, workdir: Any) -> None:
    before = await scrape(web_daemon.metrics_url)
    tid = (await web_daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    model = (await web_daemon.ops.get_thread(tid))["config"]["model"]
    steps = [
        {"fault": "http", "status": 503, "retry_after": 0, "times": 1, "calls": [{"name": "exec_command", "arguments": {"cmd": "echo hi"}}]},
        {"text": "done", "usage": {"input_tokens": 1000, "output_tokens": 20}},
    ]
    async with Watch(web_daemon, tid) as watch:
        await web_daemon.ops.send(tid, mock_directive(steps))
        await watch.wait_type("turn.completed")
    after = await scrape(web_daemon.metrics_url)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("echsd_turns_started_total") == 1
    assert moved("echsd_turns_finished_total", outcome="completed") == 1
    assert moved("echsd_tool_calls_total", tool="exec_command", outcome="ok") == 1
    assert moved("echsd_tool_call_duration_seconds_count", tool="exec_command") == 1
    assert moved("echsd_model_retries_total") == 1
    assert moved("echsd_model_request_duration_seconds_count", model=model, outcome="error") == 1
    assert moved("echsd_model_request_duration_seconds_count", model=model, outcome="completed") == 2
    assert moved("echsd_model_time_to_first_token_seconds_count", model=model) == 2
    assert moved("echsd_tokens_total", model=model, kind="input") >= 1000
    assert moved("echsd_tokens_total", model=model, kind="output") >= 20
    assert moved("echsd_store_commit_batch_events_count") >= 1 and moved("echsd_store_commit_batch_events_sum") >= 10
    assert value(after, "echsd_threads", state="idle") == 1
    for family in after.values():  # bounded labels: no thread, turn, call or input ids
        for sample in family.samples:
            assert not any(IDS.search(str(label)) for label in sample.labels.values()), sample


async def test_the_metrics_listener_serves_metrics_alone(web_daemon: Any) -> None:
    base = web_daemon.metrics_url.removesuffix("/metrics")
    async with httpx.AsyncClient(base_url=base) as http:
        assert (await http.get("/")).status_code == 404
        assert (await http.get("/api/threads")).status_code == 404
        assert (await http.get("/metrics", headers={"Host": "evil.example"})).status_code == 403
        assert (await http.get("/metrics", headers={"Origin": "http://evil.example"})).status_code == 403


@pytest.mark.skipif(landlock.abi_version() < 1, reason="needs Landlock: without it no write is refused by the kernel")
async def test_sandbox_denials_are_counted_by_tool_and_kind(web_daemon: Any, workdir: Any, tmp_path: Any) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    before = await scrape(web_daemon.metrics_url)
    tid = (await web_daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]  # workspace-write: the kernel refuses writes elsewhere
    patch = f"*** Begin Patch\n*** Add File: {outside}/patched.txt\n+no\n*** End Patch\n"
    steps = [
        {"calls": [{"name": "exec_command", "arguments": {"cmd": f"touch {outside}/touched"}}]},
        {"calls": [{"name": "exec_command", "arguments": {"cmd": "touch inside"}}]},
        {"calls": [{"name": "apply_patch", "arguments": {"input": patch}}]},
        {"text": "done"},
    ]
    async with Watch(web_daemon, tid) as watch:
        await web_daemon.ops.send(tid, mock_directive(steps))
        await watch.wait_type("turn.completed")
    completed = [e.data for e in watch.of_type("tool.completed")]
    assert [c.get("sandbox_denied") for c in completed] == ["command", None, "patch"], completed
    assert not (outside / "touched").exists() and (workdir / "inside").exists() and not (outside / "patched.txt").exists()
    after = await scrape(web_daemon.metrics_url)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("echsd_sandbox_denials_total", tool="exec_command", kind="command") == 1
    assert moved("echsd_sandbox_denials_total", tool="apply_patch", kind="patch") == 1
    assert moved("echsd_sandbox_denials_total") == 2


@pytest.mark.skipif(landlock.abi_version() < 1, reason="needs Landlock, to make a thread its absence then refuses")
async def test_a_sandbox_this_machine_cannot_enforce_counts_as_unenforceable(
    tmp_path: Any, mock_upstream: Any, nursery: Any, workdir: Any
) -> None:
    from echsd.daemon import Daemon

    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    first = Daemon(make_settings(state, mock_upstream.base_url))
    await nursery.start(first.run)
    tid = (await first.ops.create_thread(cwd=str(workdir)))["thread_id"]  # workspace-write, enforceable here
    first.request_stop()
    await first.wait_stopped()
    (state / "config.toml").write_text('sandbox_disable = ["landlock"]\n')  # restarted without it: refused
    daemon = Daemon(make_settings(state, mock_upstream.base_url, metrics="tcp://127.0.0.1:0"))
    await nursery.start(daemon.run)
    try:
        async with Watch(daemon, tid) as watch:
            await daemon.ops.send(tid, mock_directive([{"calls": [{"name": "exec_command", "arguments": {"cmd": "touch ran"}}]}, {"text": "ok"}]))
            await watch.wait_type("turn.completed")
        assert [e.data.get("sandbox_denied") for e in watch.of_type("tool.completed")] == ["unenforceable"]
        assert not (workdir / "ran").exists()
        families = await scrape(daemon.metrics_url)
        assert value(families, "echsd_sandbox_denials_total", tool="exec_command", kind="unenforceable") == 1
    finally:
        daemon.request_stop()
        await daemon.wait_stopped()
