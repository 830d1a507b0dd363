"""Human-readable forms of the daemon status, thread objects and acknowledgements."""

from __future__ import annotations

import time
from typing import Any

from echsd.cli.render import Style, ago, clip_left, duration, one_line, short_path, table, tokens, when

LABEL = "  instructions  "  # the labels' column in thread_lines
NAME_CHARS = 40  # a display name in `echs ls` (`echs show` has room for all of it)
WAITING_CHARS = 48  # what a thread waits on, in `echs ls` (`echs why` says all of it)
MOCK_NOTE = "the built-in scripted mock model: no model credentials were found"


def status_lines(status: dict[str, Any], style: Style) -> list[str]:
    threads = status.get("threads") or {}
    provider = str(status.get("provider", "?"))
    shown_provider = style(provider, fg="yellow") + style.dim(f" ({MOCK_NOTE})") if provider == "mock" else provider
    counts = ", ".join(f"{threads.get(k, 0)} {k}" for k in ("running", "idle", "paused", "killed") if k in threads)
    lines = [
        f"{style.bold('echsd')} {status.get('version', '?')}, up {duration(float(status.get('uptime_s') or 0))}",
        f"provider   {shown_provider}",
        f"model      {status.get('model') or '-'}",
        f"threads    {threads.get('total', 0)}" + (f" ({counts})" if counts else "")
        + (f"; {threads['cluster_total']} on all nodes" if "cluster_total" in threads else ""),
    ]
    usage = status.get("usage") or {}
    if usage.get("turns"):
        lines.append(f"usage      {usage_line(usage)}")
    for limit in (status.get("rate_limits") or {}).get("limits") or []:
        lines.append(f"limits     {rate_limit_line(limit)}")
    servers = status.get("mcp_servers") or {}
    if servers.get("total"):
        down = style(f"{servers['down']} down", fg="red") if servers.get("down") else "0 down"
        starting = f", {servers['starting']} starting" if servers.get("starting") else ""
        lines.append(f"mcp        {servers['total']} server{'' if servers['total'] == 1 else 's'}: {servers['up']} up, {down}{starting}")
    if status.get("containment"):
        lines.append(f"tools run  contained by {status['containment']}" + (style.dim(" (setsid escapes it)") if status["containment"] == "process-group" else ""))
    lines.extend(sandbox_lines(status.get("sandbox"), style))
    store = status.get("store") or {}
    if store.get("reachable") is False:
        lines.append("store      " + style(f"out of reach: {store.get('error')}", fg="red"))
    nodes = status.get("nodes") or []
    if len(nodes) > 1 or any(node.get("lease_expires_in_s") is not None for node in nodes):
        lines.append(f"node       {status.get('node') or '-'} (of {len(nodes)} sharing the store)")
        lines.extend(f"           {node_line(node, style)}" for node in nodes)
    if status.get("base_url"):
        lines.append(f"endpoint   {status['base_url']}")
    if status.get("state_dir"):
        lines.append(f"state dir  {short_path(str(status['state_dir']))}")
    return lines


def sandbox_lines(sandbox: dict[str, Any] | None, style: Style) -> list[str]:
    """What confines the model's commands here, and what does not."""
    if not sandbox:
        return []
    if sandbox.get("filesystem"):
        line = f"sandbox    {sandbox['filesystem']}; network off by {sandbox.get('network') or style('nothing', fg='red')}"
    else:
        line = "sandbox    " + style("no filesystem sandbox here", fg="red") + f" ({'; '.join(sandbox.get('problems') or [])})"
        line += "; " + ('threads run unconfined (sandbox_fallback = "unconfined")' if sandbox.get("fallback") == "unconfined" else "workspace-write and read-only threads are refused")
    return [line, *(f"           {style.dim('not protected: ' + limit)}" for limit in sandbox.get("limits") or [])]


def node_line(node: dict[str, Any], style: Style) -> str:
    """A node of the cluster: its threads and how its lease stands."""
    left = node.get("lease_expires_in_s")
    if left is None:
        lease = "no lease (runs alone)"
    elif node.get("alive"):
        lease = f"lease renewed, {left:.1f} s left"
    else:
        lease = style(f"lease expired {-left:.1f} s ago (its threads go to another node)", fg="red")
    count = int(node.get("threads", 0))
    return f"{node.get('node_id')}: {count} thread{'' if count == 1 else 's'}, {lease}"


def thread_table(threads: list[dict[str, Any]], style: Style, width: int | None = None) -> list[str]:
    if not threads:
        return ["no threads (create one with `echs new`)"]
    with_parent = any(t.get("parent") for t in threads)
    with_name = any(t.get("name") for t in threads)
    headers = ["THREAD", "STATE", *(["NAME"] if with_name else []), "WAITING ON", "MODEL", "TURNS", "COST", "QUEUED", "CREATED"]
    headers += [*(["PARENT"] if with_parent else []), "CWD"]
    rows = []
    for thread in threads:
        config = thread.get("config") or {}
        usage = thread.get("usage") or {}
        row = [
            str(thread.get("thread_id")),
            str(thread.get("state")),
            *([one_line(str(thread.get("name") or "-"), NAME_CHARS)] if with_name else []),
            one_line(waiting_text(thread.get("waiting_on")), WAITING_CHARS),
            str(config.get("model", "-")),
            str(usage.get("turns", 0)),
            cost(usage.get("cost_usd")),
            str(thread.get("queued", 0)),
            ago(thread.get("created_at")),
            *([thread.get("parent") or "-"] if with_parent else []),
            short_path(str(config.get("cwd", "-"))),
        ]
        rows.append(row)
    # On a narrow terminal these go first: cost, queue, turns, parent, age, model, name.
    order = ["COST", "QUEUED", "TURNS", "PARENT", "CREATED", "MODEL", "NAME", "WAITING ON"]
    droppable = [headers.index(header) for header in order if header in headers]
    return table(headers, rows, style, colors=[None, "state"], width=width, droppable=droppable)


def waiting_text(waiting: dict[str, Any] | None, now: float | None = None) -> str:
    """A thread's ``waiting_on`` in a few words: ``tool exec_command 2m 05s (pid 4242: make test)``."""
    if not waiting:
        return "-"
    now = time.time() if now is None else now
    kind = str(waiting.get("kind"))
    since = waiting.get("since")
    age = f" {duration(max(0.0, now - float(since)), whole=True)}" if since else ""
    if kind == "model":
        last = waiting.get("last_event_age_s")
        quiet = f", last event {duration(float(last), whole=True)} ago" if last is not None else ""
        text = f"model stream{age}{quiet}"
    elif kind == "tool":
        process = f" (pid {waiting['pid']}: {one_line(str(waiting.get('command') or ''), 60)})" if waiting.get("pid") else ""
        more = f" +{int(waiting['tools']) - 1} more" if waiting.get("tools") else ""
        text = f"tool {waiting.get('tool')}{age}{process}{more}"
    elif kind == "approval":
        text = f"approval {waiting.get('request_id')} for {waiting.get('tool')}{age}"
    elif kind == "agents":
        agents = list(waiting.get("agents") or [])
        text = f"sub-agents {', '.join(agents[:4])}{' …' if len(agents) > 4 else ''}{age}"
    elif kind == "retry":
        until = float(waiting.get("until") or now)
        text = f"retry {waiting.get('attempt')}/{waiting.get('max_retries')} in {duration(max(0.0, until - now), whole=True)}: {one_line(str(waiting.get('reason') or ''), 60)}"
    elif kind == "queue":
        text = f"queued behind {waiting.get('behind')}{age}"
    elif kind == "paused":
        queued = int(waiting.get("queued") or 0)
        text = "paused" + (f", {queued} input(s) queued" if queued else "")
    elif kind == "given_up":
        text = f"given up: {waiting.get('reason')}"
    else:
        text = f"{kind}{age}"
    if kind not in ("paused", "queue") and waiting.get("queued"):
        text += f"; {waiting['queued']} input(s) queued behind this turn"
    return text


def tree_lines(nodes: list[dict[str, Any]], style: Style) -> list[str]:
    """``thread.tree``'s nested ``{thread_id, state, children}`` drawn as a tree."""
    if not nodes:
        return ["no threads (create one with `echs new`)"]
    lines: list[str] = []

    def draw(node: dict[str, Any], lead: str, branch: str) -> None:
        lines.append(f"{lead}{branch}{node.get('thread_id')}  {style.state(str(node.get('state')))}")
        children = node.get("children") or []
        below = lead + ("" if not branch else "   " if branch == "└─ " else "│  ")
        for index, child in enumerate(children):
            draw(child, below, "└─ " if index == len(children) - 1 else "├─ ")

    for node in nodes:
        draw(node, "", "")
    return lines


def cost(value: Any) -> str:
    """Dollars, estimated from the model catalog's prices ("-" when nothing was priced)."""
    if not value:
        return "-"
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def usage_line(usage: dict[str, Any]) -> str:
    return (
        f"{usage.get('turns', 0)} turn{'' if usage.get('turns') == 1 else 's'}; input {tokens(usage.get('input_tokens'))}"
        f" (cached {tokens(usage.get('cached_tokens'))}), output {tokens(usage.get('output_tokens'))}"
        f" (reasoning {tokens(usage.get('reasoning_tokens'))}); cost {cost(usage.get('cost_usd'))}"
    )


def rate_limit_line(limit: dict[str, Any]) -> str:
    """``primary 42% of 300 min (resets in 10 min)`` and the like, for ChatGPT plan limits."""
    parts = []
    for window in ("primary", "secondary"):
        data = limit.get(window) or {}
        if data.get("used_percent") is None:
            continue
        text = f"{window} {data['used_percent']:g}%"
        if data.get("window_minutes"):
            text += f" of {data['window_minutes']} min"
        parts.append(text)
    credits = limit.get("credits") or {}
    if credits.get("balance") is not None:
        parts.append(f"credits {credits['balance']}")
    return ", ".join(parts) or "reported"


def agents_md_lines(thread: dict[str, Any], config: dict[str, Any], room: int) -> list[str]:
    """Which AGENTS.md files the model was last given (``-`` before the first turn)."""
    context = thread.get("context")
    if not context:
        return ["  agents.md     " + ("off (project_docs false)" if config.get("project_docs") is False else "- (sent at the next turn)")]
    state = str(context.get("project_docs_state", "on"))
    docs = context.get("project_docs") or []
    if state != "on":
        return [f"  agents.md     {state}"]
    if not docs:
        return ["  agents.md     none found (repository root down to cwd)"]
    lines = []
    for index, doc in enumerate(docs):
        note = " (cut at the cap)" if doc.get("truncated") and doc.get("bytes") else ""
        note = f" (unreadable: {doc['error']})" if doc.get("error") else note
        size = f"{doc.get('bytes', 0):,} bytes"
        label = "  agents.md     " if index == 0 else "                "
        lines.append(label + clip_left(short_path(str(doc.get("path"))), max(20, room - len(size) - len(note) - 3)) + f"  {size}{note}")
    return lines


def thread_lines(thread: dict[str, Any], style: Style, width: int | None = None, agent_types: dict[str, str] | None = None) -> list[str]:
    """``echs show``; ``agent_types``: the children's (``spawn_agent``'s presets), by id."""
    config = thread.get("config") or {}
    instructions = str(config.get("instructions", ""))
    children = [f"{child} ({(agent_types or {})[child]})" if (agent_types or {}).get(child) else child for child in thread.get("children") or []]
    steps = int(config.get("steps") or 1)
    room = max(20, (width or 10**6) - len(LABEL))  # what a value may take after its label

    def value(text: str, limit: int = room) -> str:
        return one_line(text, limit)

    size = f"  ({len(instructions)} chars)" if instructions.strip() else ""
    shown = instructions if instructions.strip() else "the model's base prompt"
    lines = [
        f"{style.bold(str(thread.get('thread_id')))}  {style.state(str(thread.get('state')))}",
        *([f"  name          {value(str(thread['name']))}"] if thread.get("name") else []),
        f"  created       {when(thread.get('created_at'))}",
        f"  parent        {thread.get('parent') or '-'}",
        *([f"  agent type    {value(str(thread['agent_type']))}"] if thread.get("agent_type") else []),
        *([f"  node          {thread['node']}"] if thread.get("node") else []),
        f"  children      {value(', '.join(children)) if children else '-'}",
        f"  cwd           {clip_left(short_path(str(config.get('cwd', '-'))), room)}",
        *([f"  worktree      {clip_left(short_path(str(thread['worktree']['path'])), room)}", f"  branch        {thread['worktree']['branch']}"] if thread.get("worktree") else []),
        *([f"  forked from   {thread['forked_from']} (at turn {thread.get('forked_at_turn')})"] if thread.get("forked_from") else []),
        f"  model         {value(str(config.get('model', '-')) + '  (reasoning ' + str(config.get('reasoning', '-')) + ')')}",
        f"  tools         {value(', '.join(config.get('tools') or []) or '-')}",
        f"  policy        {value('writes ' + str(config.get('writes', 'allow')) + ', approval ' + str(config.get('approval', 'never')))}",
        f"  sandbox       {value(sandbox_summary(config))}",
        f"  steps         {'1 turn per input' if steps == 1 else f'up to {steps} turns per input (an autonomous run)'}",
        f"  chain         {'on (previous_response_id: only new items are sent)' if config.get('chain') else 'off'}",
        f"  instructions  {value(shown, min(60, max(10, room - len(size))))}" + style.dim(size),
        *agents_md_lines(thread, config, room),
        f"  queued        {thread.get('queued', 0)}",
        f"  usage         {value(usage_line(thread.get('usage') or {}))}",
    ]
    plan = thread.get("plan") or {}
    for index, step in enumerate(plan.get("steps") or []):
        mark = {"completed": "✓", "in_progress": "▶"}.get(str(step.get("status")), "·")
        lines.append(("  plan          " if index == 0 else "                ") + f"{mark} {value(str(step.get('step')), min(70, room - 2))}")
    if thread.get("active_turn"):
        lines.append(f"  active turn   {thread['active_turn']}")
    if thread.get("waiting_on"):
        lines.append(f"  waiting on    {value(waiting_text(thread['waiting_on']))}")
    if thread.get("last_seq") is not None:
        lines.append(f"  last event    #{thread['last_seq']}")
    if thread.get("failed"):
        lines.append(style(f"  failed        {value(str(thread['failed']))}", fg="red"))
    return lines


def sandbox_summary(config: dict[str, Any]) -> str:
    mode = str(config.get("sandbox", "-"))
    text = f"{mode}, network {config.get('network', '-')}"
    roots = config.get("writable_roots") or []
    if roots and mode == "workspace-write":
        text += ", also writable: " + ", ".join(short_path(str(root)) for root in roots)
    return text


def ack_line(ack: dict[str, Any]) -> str:
    verbs = {"started": "started a turn", "queued": "queued", "steered": "steered into the running turn"}
    what = verbs.get(str(ack.get("disposition")), str(ack.get("disposition")))
    return f"{ack.get('input_id')}: {what} on {ack.get('thread_id')}"
