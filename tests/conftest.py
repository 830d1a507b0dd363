"""Fixtures: a real mock upstream over HTTP, and a real in-process daemon on a temp state dir."""

from __future__ import annotations

import os
from typing import Any, AsyncIterator, Iterator

import pytest

from tests.helpers import PG_SOCKET_ENV, make_settings, suite_store
from tests.pgcluster import TempCluster, missing_reason


@pytest.fixture
async def mock_upstream() -> AsyncIterator[Any]:
    from echsd.codex.mock import open_mock_upstream

    async with open_mock_upstream() as mock:
        yield mock


@pytest.fixture
async def daemon(tmp_path: Any, mock_upstream: Any, nursery: Any) -> AsyncIterator[Any]:
    from echsd.daemon import Daemon

    instance = Daemon(make_settings(tmp_path / "state", mock_upstream.base_url))
    await nursery.start(instance.run)
    yield instance
    instance.request_stop()
    await instance.wait_stopped()


@pytest.fixture
def workdir(tmp_path: Any) -> Any:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture(autouse=True, scope="session")
def _subreaper() -> None:
    """Like the daemon, adopt orphans so killed tool processes are reaped, not left as zombies."""
    from echsd.tools.process import become_subreaper

    become_subreaper()


@pytest.fixture(autouse=True, scope="session")
def _home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Commands the model runs start a login shell (exec_command's default, as Codex's), which
    reads the profile in $HOME: the suite's commands read an empty home, not the profile of
    whoever runs it (a pyenv or nvm set-up there can cost a second or a minute per command)."""
    home = tmp_path_factory.mktemp("home")
    saved = os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = saved


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[TempCluster]:
    """One throwaway PostgreSQL cluster for the whole session (skips where it cannot run)."""
    reason = missing_reason()
    if reason:
        if suite_store() == "postgresql":
            pytest.fail(f"ECHS_TEST_STORE=postgresql, but {reason}", pytrace=False)
        pytest.skip(reason)
    cluster = TempCluster().start()
    os.environ[PG_SOCKET_ENV] = str(cluster.socket_dir)  # for helpers and child processes
    try:
        yield cluster
    finally:
        os.environ.pop(PG_SOCKET_ENV, None)
        cluster.stop()


@pytest.fixture(autouse=True, scope="session")
def _suite_store(request: pytest.FixtureRequest) -> None:
    """With ECHS_TEST_STORE=postgresql the cluster starts before any daemon (module-scoped
    fixtures included): test daemons each get a database of their own in it, named after
    their state dir (``tests.helpers.store_url_for``)."""
    if suite_store() == "postgresql":
        request.getfixturevalue("pg_cluster")


@pytest.fixture(autouse=True)
def _drop_idle_databases(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test, the test daemons' databases nobody uses any more are dropped."""
    if suite_store() != "postgresql":
        yield
        return
    cluster: TempCluster = request.getfixturevalue("pg_cluster")
    yield
    cluster.drop_idle_databases()


@pytest.fixture(autouse=True, scope="session")
def _no_git_leftovers() -> Iterator[None]:
    """After the suite, the repository the tests run in holds no worktree, branch or
    snapshot ref a test daemon made: threads created without a cwd work in the daemon's
    cwd (this repository), and their turns' snapshots (``refs/echsd/...``) are pruned here,
    as deleting the threads would have; a worktree or an ``echs/`` branch left behind fails
    the suite. Other test runs may share this repository: only what appeared during this
    session counts."""
    from tests.workspace.gitrepo import project_git_state, prune_new_snapshot_refs

    before = project_git_state()
    yield
    if before is None:
        return
    after = project_git_state()
    assert after is not None
    prune_new_snapshot_refs(before)
    leftovers = [path for path in after.worktrees if path not in before.worktrees and "pytest-of-" in path]
    branches = sorted(set(after.branches) - set(before.branches))
    assert not leftovers and not branches, f"the test daemons left git worktrees {leftovers} and branches {branches} in {after.top}"
