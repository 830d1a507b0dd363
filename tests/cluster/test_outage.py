"""A PostgreSQL outage longer than the lease ends no node: while the database is away each
node answers (``status`` says the store is out of reach, thread requests answer
``unavailable``, never ``internal``), stops the threads whose lease it can no longer
prove, and when the database returns it rejoins and the threads run again; nothing
acknowledged before the outage is lost.

The database is a throwaway PostgreSQL of the test's own (the suite's shared one must stay
up), stopped with ``pg_ctl -m fast`` (every connection cut) under a streaming turn, and
started again on the same data.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
import trio

from echsd.wire.client import WireError
from tests.cli.helpers import client_for, echs
from tests.cluster.conftest import LEASE_S, Nodes
from tests.cluster.test_failover import Follower, seqs_are_contiguous
from tests.helpers import mock_directive
from tests.pgcluster import TEST_DB_PREFIX, TempCluster, missing_reason

WAIT_S = 60.0
OUTAGE_S = LEASE_S * 3  # well past the lease: every node's lease runs out meanwhile


@pytest.fixture
def own_pg() -> Iterator[TempCluster]:
    reason = missing_reason()
    if reason:
        pytest.skip(reason)
    cluster = TempCluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()


async def _answer(client: Any, op: str, params: dict[str, Any]) -> tuple[str, Any]:
    """("ok", result) or (error code, message): what the node answered; an answer that
    the database is out of reach must say when to ask again."""
    try:
        with trio.fail_after(WAIT_S):
            return "ok", await client.request(op, params)
    except WireError as exc:
        if "out of reach" in exc.message:
            assert exc.code == "unavailable" and exc.retry_after_s is not None and exc.retry_after_s > 0, exc
        return exc.code, exc.message


async def _until_ok(client: Any, op: str, params: dict[str, Any]) -> Any:
    """Ask again while the node answers ``unavailable`` (the database is coming back)."""
    with trio.fail_after(WAIT_S):
        while True:
            code, answer = await _answer(client, op, params)
            if code == "ok":
                return answer
            assert code == "unavailable", (op, code, answer)
            await trio.sleep(0.2)


async def test_nodes_outlive_a_database_outage_and_lose_nothing(tmp_path: Path, own_pg: TempCluster) -> None:
    nodes = Nodes(tmp_path, own_pg.create_database(f"{TEST_DB_PREFIX}outage_{secrets.token_hex(4)}"))
    try:
        a = await trio.to_thread.run_sync(nodes.start, "node-a")
        b = await trio.to_thread.run_sync(nodes.start, "node-b")
        async with client_for(a.state_dir) as on_a, client_for(b.state_dir) as on_b:
            streaming = (await on_a.request("thread.create", {}))["thread_id"]
            quiet = (await on_b.request("thread.create", {}))["thread_id"]
            watch = Follower()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(watch.run, on_a, streaming)
                slow = {"text": "".join(f"w{i} " for i in range(2000)), "deltas": 2000, "delay_ms": 20}
                await on_a.request("thread.send", {"thread_id": streaming, "text": mock_directive(slow)})
                queued = await on_a.request("thread.send", {"thread_id": streaming, "text": "after the outage", "mode": "queue"})
                assert queued["disposition"] == "queued"  # acknowledged: it must run once the database is back
                await watch.wait_for(lambda e: e["event"] == "turn.delta")
                seen_before = list(watch.events)

                await trio.to_thread.run_sync(own_pg.take_down)
                down_at = time.monotonic()
                answers: dict[str, set[str]] = {}
                stores: list[dict[str, Any]] = []
                hinted = 0  # answers that the database is out of reach (each with when to ask again)
                while time.monotonic() - down_at < OUTAGE_S:
                    for name, client in (("a", on_a), ("b", on_b)):
                        code, status = await _answer(client, "status", {})
                        assert code == "ok", (name, code, status)  # the node answers, and says what is wrong
                        stores.append(status.get("store") or {})
                        for op, params in (
                            ("thread.get", {"thread_id": quiet}),
                            ("thread.events", {"thread_id": quiet, "since": 0}),
                            ("thread.send", {"thread_id": quiet, "text": "during the outage"}),
                        ):
                            code, message = await _answer(client, op, params)
                            answers.setdefault(op, set()).add(code)
                            hinted += code == "unavailable" and "out of reach" in message
                    await trio.sleep(0.25)
                shown = await trio.to_thread.run_sync(lambda: echs(a.state_dir, "status"))  # what a user sees meanwhile
                assert shown.returncode == 0 and "out of reach" in shown.stdout, shown
                assert a.process is not None and a.process.poll() is None, "".join(a.lines[-30:])
                assert b.process is not None and b.process.poll() is None, "".join(b.lines[-30:])
                await trio.to_thread.run_sync(own_pg.bring_back)

                for op, codes in answers.items():
                    assert codes <= {"ok", "unavailable"}, (op, codes)  # never internal
                assert stores[-1].get("reachable") is False, stores[-1]
                assert "out of reach" in stores[-1]["error"]
                assert "unavailable" in answers["thread.send"] and hinted

                # The database is back: the turn cut by the outage is closed, the queued input runs.
                await watch.wait_for(lambda e: e["event"] == "turn.interrupted", timeout=WAIT_S)
                delivered = await watch.wait_for(
                    lambda e: e["event"] == "input.delivered" and e["data"].get("input_id") == queued["input_id"], timeout=WAIT_S
                )
                await watch.wait_for(lambda e: e["event"] == "turn.completed" and e["seq"] > delivered["seq"], timeout=WAIT_S)
                nursery.cancel_scope.cancel()

            # Both nodes are members again, and both threads take work.
            with trio.fail_after(WAIT_S):
                while True:
                    status = await _until_ok(on_b, "status", {})
                    if status.get("store", {}).get("reachable") and sorted(n["node_id"] for n in status["nodes"] if n["alive"]) == ["node-a", "node-b"]:
                        break
                    await trio.sleep(0.2)
            for client, thread_id in ((on_a, quiet), (on_b, streaming)):
                ack = await _until_ok(client, "thread.send", {"thread_id": thread_id, "text": "all is well"})
                assert ack["disposition"] in ("started", "queued")

            # Nothing acknowledged was lost: what the client saw before the outage is in the
            # log as it was, the log has no gap, and the queued input was answered.
            log = await _until_ok(on_b, "thread.events", {"thread_id": streaming, "since": 0})
            assert seqs_are_contiguous(log)
            by_seq = {event["seq"]: event for event in log}
            assert all(by_seq[event["seq"]] == event for event in seen_before)
            reply = "".join(e["data"].get("delta", "") for e in log if e["seq"] > delivered["seq"])
            assert "mock reply to: after the outage" in reply
            # No worker took the outage for a crash (or wrote over what the store had meanwhile).
            logged = "".join(a.lines + b.lines)
            assert "thread worker crashed" not in logged and "giving up on thread worker" not in logged
    finally:
        nodes.stop_all()
        for name, serve in nodes.started.items():
            print(f"===== {name}\n" + "".join(line for line in serve.lines if '"level": "debug"' not in line))
