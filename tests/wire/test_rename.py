"""``thread.rename``: a display name on the thread object, kept with the thread."""

from __future__ import annotations

from typing import Any

import pytest

from echsd.store import queries
from echsd.wire.errors import WireError


async def test_a_thread_is_named_renamed_and_unnamed(client: Any, wired: Any) -> None:
    tid = (await client.create_thread())["thread_id"]
    assert (await client.get_thread(tid))["name"] is None
    named = await client.rename_thread(tid, "  fix the flaky test ")
    assert named["thread_id"] == tid and named["name"] == "fix the flaky test"
    assert [t["name"] for t in await client.list_threads() if t["thread_id"] == tid] == ["fix the flaky test"]
    row = await wired.store.read(lambda conn: queries.get_thread(conn, tid))
    assert row is not None and row.extra["name"] == "fix the flaky test"  # kept with the thread
    assert (await client.rename_thread(tid, None))["name"] is None
    assert (await client.get_thread(tid))["name"] is None


@pytest.mark.parametrize(("name", "code"), [("two\nlines", "bad_request"), ("", "bad_request"), ("x" * 257, "bad_request")])
async def test_a_bad_name_is_refused(client: Any, name: str, code: str) -> None:
    tid = (await client.create_thread())["thread_id"]
    with pytest.raises(WireError) as info:
        await client.rename_thread(tid, name)
    assert info.value.code == code
    assert (await client.get_thread(tid))["name"] is None


async def test_renaming_a_missing_or_killed_thread(client: Any) -> None:
    with pytest.raises(WireError) as info:
        await client.rename_thread("thr_0000000000000000", "ghost")
    assert info.value.code == "not_found"
    tid = (await client.create_thread())["thread_id"]
    await client.kill(tid)
    with pytest.raises(WireError) as info:
        await client.rename_thread(tid, "late")
    assert info.value.code == "invalid_state"
