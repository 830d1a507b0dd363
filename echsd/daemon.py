"""The composition root: one root nursery holding the store writer, the model endpoint
(or the built-in mock upstream), the supervisor and the wire server.

Shutdown order matters and is the reverse of start-up: stop taking requests, interrupt
running turns (reason ``shutdown``) so every turn is closed and repaired, then drain the
store writer so all of it is on disk, then cancel what is left.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio

from echsd.agent_types import SHIPPED
from echsd.appserver.server import AppServer
from echsd.blackboard.board import Blackboard
from echsd.blackboard.service import BlackboardService
from echsd.codex import ResponsesClient
from echsd.codex.endpoint_memory import FILE_NAME as MEMORY_FILE
from echsd.codex.endpoint_memory import EndpointMemory
from echsd.codex.model_keeper import ModelListKeeper
from echsd.codex.model_list import CACHE_FILE as MODEL_CACHE_FILE
from echsd.logs import get_logger
from echsd.mcp.confine import ServerSandbox
from echsd.mcp.door.http import McpHttpDoor
from echsd.mcp.servers import McpServers
from echsd.router import LocalNode, ThreadRouter
from echsd.router.local_client import LocalClient
from echsd.service import gc_policy
from echsd.service.sdnotify import Notifier
from echsd.settings import Settings
from echsd.store import Store, open_store
from echsd.events import Event
from echsd.hooks.runner import Hooks
from echsd.metrics import DaemonMetrics
from echsd.metrics.live import LeaseHealth, LiveCollector, LiveSources
from echsd.metrics.taps import event_taps
from echsd.threads.hub import EventHub, EventTaps
from echsd.threads.lease import Lease
from echsd.threads.config import SandboxRules
from echsd.threads.state import ThreadState
from echsd.web.app import WebApp
from echsd.web.context import WebContext
from echsd.web.door import HttpListener, WebDoor
from echsd.web.guard import allowed_hosts
from echsd.web.sessions import WebSessions
from echsd.threads.supervisor import Supervisor
from echsd.threads.workspaces import Workspaces
from echsd.tools.base import Tool
from echsd.tools.process import become_subreaper, kill_all_groups, use_group_registry, use_sandbox
from echsd.tools.sandbox.runtime import SandboxRuntime
from echsd.tools.registry import builtin_tools
from echsd.wire.outbox import OutboxTally
from echsd.wire.peers import Peers
from echsd.wire.server import WireServer
from echsd.wire.session import WireContext
from echsd.wire.token import ensure_token

if TYPE_CHECKING:
    from echsd.cluster.node import ClusterNode

log = get_logger(__name__)

SHUTDOWN_BUDGET_S = 10.0  # the contract's promise, from the signal to the exit
EXIT_RESERVE_S = 2.0  # of it, kept for what follows the drain (closing, Python's exit): ~1 s under load


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


@dataclass
class Daemon:
    settings: Settings
    store: Store | None = None
    blackboard: Blackboard | None = None
    hub: EventHub = field(default_factory=EventHub)
    peers: Peers = field(default_factory=Peers)  # authenticated connections, by id
    extra_tools: list[Tool] = field(default_factory=list)  # an embedding program's own tools
    supervisor: Supervisor | None = None
    router: ThreadRouter | None = None  # every op, from every door, goes through it
    ops: LocalClient | None = None  # the client library's methods, in process
    server: WireServer | None = None
    app_server: AppServer | None = None  # the Codex app-server protocol listeners (--app-server)
    cluster: ClusterNode | None = None  # one node of several sharing a PostgreSQL store
    mcp: McpServers | None = None  # the MCP servers of config.toml, shared by the threads
    model_list: ModelListKeeper | None = None  # keeps the catalog's endpoint layer (tuning.model_list)
    mcp_door: McpHttpDoor | None = None  # echsd's own MCP tools over streamable HTTP (--mcp)
    web: WebDoor | None = None  # the web view (--web)
    hooks: Hooks | None = None  # [hooks]: programs and URLs told of events
    metrics_url: str | None = None  # where --metrics serves (its port resolved)
    metrics: DaemonMetrics = field(default_factory=DaemonMetrics)  # GET /metrics (--web, --metrics)
    taps: EventTaps = field(default_factory=EventTaps)  # this node's committed events, to metrics and hooks
    tally: OutboxTally = field(default_factory=OutboxTally)  # every client connection's outbox
    base_url: str | None = None
    settle_gc: bool = False  # echsd serve: once ready, freeze what start-up loaded (gc_policy)
    _stop: trio.Event = field(default_factory=trio.Event)
    _stopped: trio.Event = field(default_factory=trio.Event)

    def request_stop(self) -> None:
        self._stop.set()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED, handle_signals: bool = False) -> None:
        settings = self.settings
        notifier = Notifier.from_environ()  # first: no tool process inherits NOTIFY_SOCKET
        settings.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        become_subreaper()
        ensure_token(settings.token_path)
        server = self.server = WireServer(settings)
        await server.bind()  # first: a second daemon on this state dir stops here
        app_server = self.app_server = AppServer(settings, admission=server.admission)
        mcp_door = self.mcp_door = McpHttpDoor(settings)
        web = self.web = WebDoor(settings) if settings.web is not None else None
        scrape = HttpListener(settings.metrics, "metrics") if settings.metrics is not None else None
        http = [listener for listener in (web.listener if web else None, scrape) if listener is not None]
        try:
            await app_server.bind()
            mcp_door.bind()
            for listener in http:
                listener.bind()
            store = open_store(settings.store_url, node_id=settings.node_id)
        except BaseException:
            for listener in http:
                listener.close()
            mcp_door.close()
            app_server.close()
            server.close()
            raise
        self.store = store
        # ... and kill a crashed run's leftovers; as echsd serve (its signals are its own) it
        # may own a cgroup it has to itself, and kill what escapes into it (tools/strays.py)
        use_group_registry(settings.state_dir / "run" / "groups", claim_cgroup=handle_signals, env_policy=settings.env_policy)
        sandbox = _sandbox_for(settings)
        use_sandbox(sandbox)
        store.writer.set_on_commit(self._committed)
        store.writer.on_batch = self.metrics.store_batch
        try:
            async with trio.open_nursery() as root:
                await root.start(store.writer.run)
                await root.start(store.run_background)
                self.base_url, mock_socket = settings.base_url, None
                if settings.provider == "mock":
                    self.base_url, mock_socket = await self._start_mock(root)
                endpoint = settings.endpoint(self.base_url, mock_socket)
                client = ResponsesClient(
                    endpoint,
                    catalog=settings.catalog,
                    max_retries=settings.tuning.max_retries,
                    idle_timeout_s=settings.tuning.stream_idle_timeout_s,
                    memory=EndpointMemory(endpoint.base_url, settings.state_dir / MEMORY_FILE),
                    observer=self.metrics.model_request,
                )
                if settings.tuning.model_list:
                    self.model_list = ModelListKeeper(
                        client, settings.state_dir / MODEL_CACHE_FILE, min_interval_s=settings.tuning.model_list_interval_s
                    )
                    await root.start(self.model_list.run)
                tuning = settings.tuning
                board = Blackboard(store, max_value_bytes=tuning.blackboard_max_value_bytes, log_keep=tuning.blackboard_log_keep)
                self.blackboard = board
                await board.load()
                await sandbox.start()
                agent_types = settings.agent_types or SHIPPED
                tools = builtin_tools(agent_types) | {tool.spec.name: tool for tool in self.extra_tools}
                confine = ServerSandbox(sandbox, settings.sandbox_mode, settings.sandbox_network, settings.writable_roots)
                mcp = self.mcp = McpServers(settings.mcp_servers, os.getcwd(), confine)
                await root.start(mcp.run)
                lease = Lease()  # this node's (several daemons over PostgreSQL); the cluster node changes it
                cluster = self.cluster = await self._join_cluster(store, board, lease)
                router = self.router = ThreadRouter(store.node_id, cluster)
                workspaces = Workspaces(settings.worktree_root, diff_bytes=tuning.turn_diff_bytes, snapshots=tuning.turn_snapshots)
                supervisor = self.supervisor = Supervisor(
                    store,
                    client,
                    tools,
                    tuning,
                    default_model=settings.model,
                    blackboard=board,
                    ops=router,
                    lease=lease,
                    workspaces=workspaces,
                    agent_types=agent_types,
                    mcp=mcp,
                    sandbox_rules=SandboxRules(
                        settings.sandbox_mode, settings.sandbox_network, settings.writable_roots, unenforceable=sandbox.refusals
                    ),
                    approval=settings.approval,
                    user_agents_md=settings.user_agents_md,
                )
                boards = BlackboardService(board, page_bytes=tuning.max_message_bytes // 2)
                router.attach(LocalNode(supervisor, store, settings, boards, router, cluster, mcp, web))
                self._observe(supervisor, cluster)
                self.ops = LocalClient(router)
                if cluster is not None:
                    cluster.attach(supervisor, router)
                assert self.hooks is not None
                await root.start(self.hooks.run)
                await supervisor.load()
                await root.start(supervisor.run)
                if cluster is not None:
                    await root.start(cluster.run)
                await root.start(server.serve, WireContext(router, self.hub, store, settings, boards, self.peers, self.tally))
                await root.start(app_server.serve, router, self.hub)
                await root.start(mcp_door.serve)
                if web is not None:
                    await root.start(web.serve, self._web_context(router, store, boards, web.sessions, web.listener))
                if scrape is not None:
                    await root.start(scrape.serve, WebApp(self._web_context(router, store, boards, None, scrape), page=False))
                    self.metrics_url = f"http://{scrape.host}:{scrape.port}/metrics"
                if handle_signals:
                    await root.start(self._watch_signals)  # before "ready": a stop right after it is graceful
                log.info(
                    "echsd ready",
                    provider=settings.provider,
                    model=settings.model,
                    base_url=self.base_url,
                    state_dir=str(settings.state_dir),
                    app_server=app_server.urls,
                    mcp=mcp_door.urls,
                    web=web.url if web is not None else None,
                    metrics=self.metrics_url,
                )
                if self.settle_gc:
                    gc_policy.settle()
                notifier.notify("READY=1", "STATUS=ready")  # systemd (Type=notify): listeners accept now
                if self.model_list is not None:
                    self.model_list.serving.set()  # its first fetch (and httpx's import) after start-up
                if notifier.watchdog_s:
                    root.start_soon(notifier.watchdog)
                task_status.started(self)
                await self._stop.wait()
                log.info("shutting down")
                notifier.notify("STOPPING=1", "STATUS=stopping: interrupting turns, saving state")
                server.stop_accepting()
                app_server.stop_accepting()
                mcp_door.stop_accepting()
                for listener in http:
                    listener.stop_accepting()
                with trio.move_on_after(SHUTDOWN_BUDGET_S - EXIT_RESERVE_S) as budget:
                    await supervisor.shutdown(timeout_s=SHUTDOWN_BUDGET_S - EXIT_RESERVE_S - 1.0)
                    await store.writer.aclose()
                if budget.cancelled_caught:
                    log.error("shutdown budget exceeded; stopping anyway")
                if self.model_list is not None:
                    await self.model_list.stop()  # a thread's unseen model could start a fetch on the closed client
                await client.aclose()
                root.cancel_scope.cancel()
        finally:
            server.close()
            app_server.close()
            mcp_door.close()
            for listener in http:
                listener.close()
            kill_all_groups()
            if self.cluster is not None:
                self.cluster.close()
            store.close()
            self._stopped.set()
            log.info("echsd stopped")

    def _committed(self, events: list[Event]) -> None:
        """The store writer's publisher: to the hub (clients), then to this node's taps."""
        self.hub.publish(events)
        self.taps(events)

    def _observe(self, supervisor: Supervisor, cluster: ClusterNode | None) -> None:
        """The metrics: taps on committed events, and what a scrape reads of the parts."""
        records = supervisor.records

        def model_of(thread_id: str) -> str | None:
            record = records.get(thread_id)
            return record.core.config.model if record is not None else None

        def thread_states() -> dict[str, int]:
            counts = {state.value: 0 for state in ThreadState}
            for record in list(records.values()):
                counts[record.core.state.value] += 1
            return counts

        def lease() -> LeaseHealth | None:
            if cluster is None:
                return None
            keeper = cluster.keeper
            return LeaseHealth(lease_s=cluster.lease_s, renewed_s_ago=keeper.silent_s(), ok=keeper.failure is None)

        def thread_context(thread_id: str) -> dict[str, Any] | None:
            record = records.get(thread_id)
            if record is None:
                return None
            core = record.core
            return {"name": core.extra.get("name"), "parent": core.parent, "cwd": core.config.cwd, "model": core.config.model}

        self.taps.tap(event_taps(self.metrics, model_of))
        hooks = self.hooks = Hooks(
            self.settings.hooks,
            state_dir=self.settings.state_dir,
            node=supervisor.node_id,
            env=self.settings.env_policy.apply(os.environ),
            thread_context=thread_context,
            outcome=self.metrics.hook,
        )
        self.taps.tap(hooks.taps())
        tally = self.tally
        self.metrics.add_collector(
            LiveCollector(
                LiveSources(
                    thread_states=thread_states,
                    approvals_pending=lambda: len(supervisor.approvals.pending()),
                    subscriber_backlog=tally.backlog,
                    subscriber_totals=lambda: (tally.dropped, tally.gaps),
                    lease=lease,
                )
            )
        )

    def _web_context(self, router: ThreadRouter, store: Store, boards: BlackboardService, sessions: WebSessions | None, listener: HttpListener) -> WebContext:
        settings = self.settings
        tuning = settings.tuning
        return WebContext(
            router=router,
            hub=self.hub,
            store=store,
            settings=settings,
            boards=boards,
            tally=self.tally,
            sessions=sessions if sessions is not None else WebSessions(code_s=tuning.web_login_code_s, session_s=tuning.web_session_s, idle_s=tuning.web_idle_s),
            metrics=self.metrics,
            hosts=allowed_hosts(listener.address, listener.port),
            port=listener.port,
        )

    async def _join_cluster(self, store: Store, board: Blackboard, lease: Lease) -> ClusterNode | None:
        """Where the store is shared (PostgreSQL), join the nodes: lease, fencing, relay."""
        if store.dialect != "postgresql":
            return None
        from echsd.cluster.node import ClusterNode
        from echsd.store.postgres.store import PgStore

        assert isinstance(store, PgStore)
        cluster = ClusterNode(store, self.hub, board, lease, self.settings.tuning.lease_s)
        await cluster.join()
        return cluster

    async def _start_mock(self, root: trio.Nursery) -> tuple[str, str]:
        """The built-in mock on a unix socket in the (0700) state dir: no other local user
        can reach it, and it opens no network port. Returns its URL and socket path."""
        from echsd.codex.mock import MockUpstream

        log.warning("no model credentials found: using the built-in mock model (provider=mock)")
        os.chmod(self.settings.state_dir, 0o700)
        mock = MockUpstream(unix_socket=self.settings.state_dir / "mock.sock")
        await root.start(mock.serve)
        assert mock.unix_socket is not None
        return mock.base_url, str(mock.unix_socket)

    async def _watch_signals(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """SIGTERM, SIGINT and SIGHUP (the terminal of ``make run`` closed, an ssh session
        dropped) all stop the daemon gracefully."""
        with trio.open_signal_receiver(*STOP_SIGNALS) as signals:
            task_status.started()
            async for signum in signals:
                log.info("signal received", signal=signal.Signals(signum).name)
                self.request_stop()
                return


def _sandbox_for(settings: Settings) -> SandboxRuntime:
    """The sandbox, hiding the daemon's own paths from confined commands: its state directory
    (token, database, socket), every unix socket it listens on (a command reaching one could
    drive the daemon, unconfined, from inside), and the Codex login it uses."""
    hidden = [str(settings.state_dir)]
    hidden += [str(address.path) for address in (*settings.listen, *settings.app_server) if address.kind == "unix" and address.path is not None]
    if settings.provider == "codex":
        hidden.append(str(settings.codex_home / "auth.json"))
    return SandboxRuntime(disabled=settings.sandbox_disable, fallback=settings.sandbox_fallback, hidden=hidden)
