// The echsd web view: plain JavaScript, no build step, nothing fetched from elsewhere.
//
// It logs in with the one-time code in the URL's fragment (from `echs web`), then keeps two
// Server-Sent Event streams open: the overview (thread objects and approvals as they change,
// blackboard changes) and the selected thread's events (replayed from a seq, then live).
// A thread opens at its last events (its log may hold tens of thousands); earlier ones
// are loaded a page at a time, backwards, on demand.
// Every change goes through the JSON API with the session's CSRF token. Text from the
// daemon is only ever set as text (never as HTML).
"use strict";

const TAIL_EVENTS = 500;   // a thread opens with at most its last 500 events (and 1 MiB): the daemon's page

const state = {
  csrf: null,
  threads: new Map(),      // id -> thread object
  approvals: [],
  board: new Map(),        // key -> entry
  selected: null,          // thread id
  source: null,            // the selected thread's EventSource
  overview: null,          // the overview's EventSource
  lastSeq: 0,              // of the selected thread's stream
  firstSeq: null,          // the first seq shown (null: not known yet); earlier ones load on demand
  opened: 0,               // counts openStream calls: an answer for a stream since replaced is dropped
  blocks: new Map(),       // stream blocks by key (message item, reasoning item, call, approval)
  open: { assistant: null, reasoning: null },  // the text blocks being streamed into
  target: null,            // where blocks go while an earlier page is drawn (null: the stream's end)
};

const $ = (id) => document.getElementById(id);

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

// ---- small formatting ---------------------------------------------------------------------

function duration(seconds) {
  seconds = Math.max(0, seconds);
  if (seconds < 60) return `${Math.floor(seconds)}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m ${String(Math.floor(seconds % 60)).padStart(2, "0")}s`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours}h ${String(minutes % 60).padStart(2, "0")}m`;
  return `${Math.floor(hours / 24)}d ${hours % 24}h`;
}

const now = () => Date.now() / 1000;
const ago = (ts) => (ts ? duration(now() - ts) : "-");

function cost(value) {
  if (!value) return "-";
  return value < 1 ? `$${value.toFixed(4)}` : `$${value.toFixed(2)}`;
}

function short(text, limit) {
  const flat = String(text ?? "").replace(/\s+/g, " ").trim();
  return flat.length <= limit ? flat : flat.slice(0, limit - 1) + "…";
}

// What a thread waits on, in a few words (as `echs ls` and `echs why` say it).
function waitingText(waiting) {
  if (!waiting) return "-";
  const age = waiting.since ? " " + duration(now() - waiting.since) : "";
  let text;
  switch (waiting.kind) {
    case "model":
      text = `model stream${age}` + (waiting.last_event_age_s != null ? `, last event ${duration(waiting.last_event_age_s)} ago` : "");
      break;
    case "tool":
      text = `tool ${waiting.tool}${age}` + (waiting.pid ? ` (pid ${waiting.pid}: ${short(waiting.command, 60)})` : "");
      break;
    case "approval": text = `approval ${waiting.request_id} for ${waiting.tool}${age}`; break;
    case "agents": text = `sub-agents ${(waiting.agents || []).join(", ")}${age}`; break;
    case "retry": text = `retry ${waiting.attempt}/${waiting.max_retries} in ${duration((waiting.until || now()) - now())}: ${short(waiting.reason, 60)}`; break;
    case "queue": text = `queued behind ${waiting.behind}${age}`; break;
    case "paused": text = "paused" + (waiting.queued ? `, ${waiting.queued} input(s) queued` : ""); break;
    case "given_up": text = `given up: ${waiting.reason}`; break;
    default: text = `${waiting.kind}${age}`;
  }
  if (waiting.kind !== "paused" && waiting.kind !== "queue" && waiting.queued) text += `; ${waiting.queued} queued behind this turn`;
  return text;
}

function toast(message, isError) {
  const box = $("toast");
  box.textContent = message;
  box.className = isError ? "error" : "";
  box.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { box.hidden = true; }, isError ? 6000 : 2500);
}

// ---- the API ------------------------------------------------------------------------------

async function api(method, path, body) {
  const headers = { "Accept": "application/json" };
  if (method !== "GET") {
    headers["Content-Type"] = "application/json";
    if (state.csrf) headers["X-Echsd-Csrf"] = state.csrf;
  }
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: "same-origin", cache: "no-store" });
  let data = null;
  try { data = await response.json(); } catch (_) { data = null; }
  if (response.status === 401) {
    showLogin(data && data.error ? data.error.message : null);
    throw new Error("not logged in");
  }
  if (!response.ok) {
    const message = data && data.error ? data.error.message : `HTTP ${response.status}`;
    throw new Error(message);
  }
  return data;
}

async function act(method, path, body, done) {
  try {
    const result = await api(method, path, body);
    if (done) toast(done);
    return result;
  } catch (error) {
    if (error.message !== "not logged in") toast(error.message, true);
    return null;
  }
}

// ---- login --------------------------------------------------------------------------------

function showLogin(message) {
  closeStreams();
  $("app").hidden = true;
  $("logout").hidden = true;
  $("login").hidden = false;
  if (message) $("login-message").textContent = message;
}

async function boot() {
  const match = /(?:^#|&)login=([A-Za-z0-9_-]+)/.exec(location.hash);
  if (match) {
    history.replaceState(null, "", location.pathname);  // the code works once: keep it out of history
    try {
      const session = await api("POST", "/api/login", { code: match[1] });
      state.csrf = session.csrf;
    } catch (error) {
      if (error.message !== "not logged in") showLogin(error.message);
      return;
    }
  } else {
    try {
      state.csrf = (await api("GET", "/api/session")).csrf;
    } catch (_) {
      return;
    }
  }
  $("login").hidden = true;
  $("app").hidden = false;
  $("logout").hidden = false;
  document.body.dataset.ready = "1";
  await loadBoard();
  startOverview();
}

async function logout() {
  await act("POST", "/api/logout", {});
  state.csrf = null;
  showLogin("Logged out. Run `echs web` for a new link.");
}

function closeStreams() {
  if (state.overview) { state.overview.close(); state.overview = null; }
  if (state.source) { state.source.close(); state.source = null; }
  setLive(false);
}

function setLive(on) {
  const badge = $("live");
  badge.textContent = on ? "live" : "offline";
  badge.className = "live " + (on ? "on" : "off");
}

// ---- the overview -------------------------------------------------------------------------

function startOverview() {
  const source = new EventSource("/api/stream");
  state.overview = source;
  source.onopen = () => setLive(true);
  source.onerror = () => {
    setLive(false);
    if (source.readyState === EventSource.CLOSED) setTimeout(checkSession, 2000);
  };
  source.onmessage = (message) => {
    const data = JSON.parse(message.data);
    if (data.kind) onOverview(data.kind, data.data);
    else if (data.event === "blackboard.changed") onBoardChange(data.data);
    else if (data.event === "events.gap") loadBoard();  // fell behind: read the board again
  };
}

async function checkSession() {
  try {
    await api("GET", "/api/session");
    startOverview();
  } catch (_) { /* showLogin did the rest */ }
}

function onOverview(kind, data) {
  if (kind === "threads") {
    state.threads = new Map(data.map((thread) => [thread.thread_id, thread]));
  } else if (kind === "thread") {
    state.threads.set(data.thread_id, data);
  } else if (kind === "thread_gone") {
    state.threads.delete(data.thread_id);
  } else if (kind === "approvals") {
    state.approvals = data;
    renderApprovals();
    return;
  }
  renderThreads();
  if (state.selected && state.threads.has(state.selected)) renderHead(state.threads.get(state.selected));
}

// ---- the thread tree ----------------------------------------------------------------------

function treeOrder() {
  const threads = [...state.threads.values()];
  const byId = state.threads;
  const roots = threads.filter((t) => !t.parent || !byId.has(t.parent)).sort((a, b) => b.created_at - a.created_at);
  const ordered = [];
  const visit = (thread, depth, last) => {
    ordered.push([thread, depth, last]);
    const children = (thread.children || []).map((id) => byId.get(id)).filter(Boolean).sort((a, b) => a.created_at - b.created_at);
    children.forEach((child, index) => visit(child, depth + 1, index === children.length - 1));
  };
  roots.forEach((root) => visit(root, 0, true));
  return ordered;
}

function matches(thread, words, stateFilter) {
  if (stateFilter && thread.state !== stateFilter) return false;
  if (!words.length) return true;
  const text = [thread.thread_id, thread.name, thread.state, thread.config && thread.config.model, waitingText(thread.waiting_on), thread.parent].join(" ").toLowerCase();
  return words.every((word) => text.includes(word));
}

function renderThreads() {
  const body = $("thread-rows");
  const words = $("filter").value.toLowerCase().split(/\s+/).filter(Boolean);
  const stateFilter = $("state-filter").value;
  body.replaceChildren();
  let shown = 0;
  for (const [thread, depth, last] of treeOrder()) {
    if (!matches(thread, words, stateFilter)) continue;
    shown += 1;
    const row = el("tr", "thread-row");
    row.dataset.threadId = thread.thread_id;
    if (thread.thread_id === state.selected) row.classList.add("selected");
    const idCell = el("td", "tree-id");
    if (depth) {
      idCell.style.paddingLeft = `${8 + (depth - 1) * 16}px`;
      idCell.append(el("span", "twig", last ? "└─ " : "├─ "));
    }
    idCell.append(el("span", "mono", thread.thread_id));
    if (thread.name) idCell.append(el("span", "name", short(thread.name, 40)));
    const stateCell = el("td");
    stateCell.append(el("span", `state ${thread.state}`, thread.state));
    const usage = thread.usage || {};
    const ageCell = el("td", "wide age", ago(thread.created_at));
    const waitCell = el("td", "waiting");
    showWait(waitCell, thread.waiting_on);
    row.append(idCell, stateCell, el("td", "wide", (thread.config || {}).model || "-"), el("td", "wide", cost(usage.cost_usd)), ageCell, waitCell);
    row.addEventListener("click", () => selectThread(thread.thread_id));
    body.append(row);
  }
  $("no-threads").hidden = state.threads.size > 0;
  document.body.dataset.threads = String(shown);
}

function showWait(cell, waiting) {  // the row has room for a few words; the whole line on hover
  const text = waitingText(waiting);
  cell.textContent = short(text, 48);
  cell.title = text;
}

function tick() {  // ages and waits move on by themselves
  for (const row of $("thread-rows").children) {
    const thread = state.threads.get(row.dataset.threadId);
    if (!thread) continue;
    row.querySelector(".age").textContent = ago(thread.created_at);
    showWait(row.querySelector(".waiting"), thread.waiting_on);
  }
  if (state.selected && state.threads.has(state.selected)) $("thread-waiting").textContent = waitLine(state.threads.get(state.selected));
  for (const card of $("approval-list").children) {
    const at = Number(card.dataset.requestedAt);
    if (at) card.querySelector(".age").textContent = `waiting ${ago(at)}`;
  }
}

// ---- one thread ---------------------------------------------------------------------------

function waitLine(thread) {
  return thread.waiting_on ? `waiting on: ${waitingText(thread.waiting_on)}` : "waiting on nothing";
}

function renderHead(thread) {
  $("thread-id").textContent = thread.thread_id;
  $("thread-name").textContent = thread.name || "";
  const badge = $("thread-state");
  badge.textContent = thread.state;
  badge.className = `state ${thread.state}`;
  $("thread-waiting").textContent = waitLine(thread);
  const worktree = thread.worktree;
  $("thread-worktree").hidden = !worktree;
  $("thread-worktree").textContent = worktree ? `worktree: ${worktree.branch} (${worktree.path})` : "";
  const killed = thread.state === "killed";
  $("btn-interrupt").disabled = killed || thread.state !== "running";
  $("btn-pause").disabled = killed || thread.state === "paused";
  $("btn-resume").disabled = thread.state !== "paused";
  $("btn-kill").disabled = killed;
  $("btn-send").disabled = killed;
}

function selectThread(threadId, since) {
  state.selected = threadId;
  for (const row of $("thread-rows").children) row.classList.toggle("selected", row.dataset.threadId === threadId);
  $("thread-empty").hidden = true;
  $("thread-view").hidden = false;
  const thread = state.threads.get(threadId);
  if (thread) renderHead(thread);
  showTab("thread");
  openStream(threadId, since === undefined ? null : since);
}

// ``since`` null: from the thread's last events (the daemon picks where, from a turn's start).
function openStream(threadId, since) {
  $("stream").replaceChildren();
  state.blocks = new Map();
  state.open = { assistant: null, reasoning: null };
  state.firstSeq = null;
  state.opened += 1;
  delete document.body.dataset.earlier;
  delete document.body.dataset.streamReady;
  $("since").value = since === null ? "" : String(since);
  if (since > 0) note(`replaying from seq ${since + 1}`);
  connect(threadId, since);
}

// Follow the thread after ``since`` (null: its tail), keeping what is shown (after a gap:
// the missed part is read again from the store).
function connect(threadId, since) {
  if (state.source) state.source.close();
  state.lastSeq = since || 0;
  const from = since === null ? `tail=${TAIL_EVENTS}` : `since=${since}`;
  const source = new EventSource(`/api/threads/${encodeURIComponent(threadId)}/stream?${from}`);
  state.source = source;
  source.onmessage = (message) => {
    const data = JSON.parse(message.data);
    if (data.kind === "error") { note(data.data.message, "error"); source.close(); return; }
    if (data.kind === "subscribed") {
      if (state.firstSeq === null) showEarlier(data.data.since || 0);  // the first answer says where the replay began
      document.body.dataset.streamReady = threadId;
      return;
    }
    if (data.event === "events.gap" && data.data.reason === "backpressure") {
      connect(threadId, data.seq);  // too fast for this page: read the missed part again
      return;
    }
    if (typeof data.seq === "number") {
      if (data.seq <= state.lastSeq) return;
      state.lastSeq = data.seq;
    }
    onThreadEvent(data);
  };
}

function stickToBottom(action) {
  const box = $("stream");
  const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 60;
  action(box);
  if (atBottom) box.scrollTop = box.scrollHeight;
}

function add(node) {
  if (state.target) state.target.append(node);
  else stickToBottom((box) => box.append(node));
  return node;
}

// ---- earlier events: a bar at the top of the stream, and a page of them at a time -----------

function showEarlier(since) {
  state.firstSeq = since + 1;
  let bar = $("earlier");
  if (since <= 0) {
    if (bar) bar.remove();
    document.body.dataset.earlier = "0";
    return;
  }
  if (!bar) {
    bar = el("div", "earlier");
    bar.id = "earlier";
    const button = el("button", "quiet", "Load earlier");
    button.id = "btn-earlier";
    button.addEventListener("click", loadEarlier);
    bar.append(el("span", "", ""), button);
    $("stream").prepend(bar);
  }
  bar.firstChild.textContent = since === 1 ? "Event 1 is not shown." : `Events 1–${since} are not shown.`;
  bar.lastChild.disabled = false;
  document.body.dataset.earlier = String(since);
}

// A text whose deltas run on past the end of an earlier page goes on in the first block below
// it: one block, whole (the one below already holds all of it once its item completed).
function joinSplitText(unfinished, part, below) {
  const next = below && below.classList.contains("earlier-part") ? below.firstElementChild : below;
  for (const found of unfinished) {
    found.node.classList.remove("streaming");
    const kind = found.node.className.split(" ")[1];
    if (found.node !== part.lastElementChild || !next || !next.classList.contains(kind) || !(next.lastChild instanceof Text)) continue;
    if (!next.dataset.whole) next.lastChild.data = found.text.data + next.lastChild.data;
    found.node.remove();
  }
}

// The page of events just before the first one shown, drawn above it (blocks of its own:
// a call that began there and ended below shows in both parts), the view kept where it was.
async function loadEarlier() {
  const threadId = state.selected, opened = state.opened, bar = $("earlier");
  if (!threadId || !bar || state.firstSeq === null) return;
  bar.lastChild.disabled = true;
  const page = await act("GET", `/api/threads/${encodeURIComponent(threadId)}/earlier?before=${state.firstSeq}&limit=${TAIL_EVENTS}`);
  if (!page || opened !== state.opened) return;  // failed (said), or another stream opened meanwhile
  const part = el("div", "earlier-part");
  const kept = { blocks: state.blocks, open: state.open, lastSeq: state.lastSeq };
  Object.assign(state, { blocks: new Map(), open: { assistant: null, reasoning: null }, target: part });
  let unfinished;
  try {
    for (const event of page.events) {
      if (typeof event.seq === "number") state.lastSeq = event.seq;
      onThreadEvent(event);
    }
    unfinished = Object.values(state.open).filter(Boolean);
  } finally {
    Object.assign(state, kept, { target: null });
  }
  joinSplitText(unfinished, part, bar.nextElementSibling);
  const box = $("stream");
  const height = box.scrollHeight;
  if (part.firstChild) bar.after(part);
  box.scrollTop += box.scrollHeight - height;
  showEarlier(page.since);
}

function note(text, cls) {
  return add(el("div", `note ${cls || ""}`, text));
}

function block(key, make) {
  let found = state.blocks.get(key);
  if (!found) {
    found = make();
    state.blocks.set(key, found);
    add(found.node);
  }
  return found;
}

function textBlock(key, cls, label) {
  return block(key, () => {
    const node = el("div", `item ${cls}`);
    node.append(el("span", "label", label));
    const text = document.createTextNode("");
    node.append(text);
    return { node, text };
  });
}

function contentText(item) {
  return (item.content || item.summary || []).map((part) => part.text || "").join("");
}

function callBlock(callId, name, args) {
  return block(`call:${callId}`, () => {
    const node = el("div", "item tool running");
    node.dataset.callId = callId;
    const head = el("div", "head", `${name || "tool"}(${short(args, 300)})`);
    const status = el("div", "label", "running");
    const output = el("div", "output");
    node.append(status, head, output);
    return { node, head, status, output, streamed: false };
  });
}

function argsText(item) {
  if (item.input !== undefined) return item.input;
  const raw = item.arguments;
  if (typeof raw !== "string") return JSON.stringify(raw);
  try {
    const parsed = JSON.parse(raw);
    if (parsed && typeof parsed.cmd === "string") return parsed.cmd;
    return raw;
  } catch (_) { return raw; }
}

function onThreadEvent(event) {
  const data = event.data || {};
  switch (event.event) {
    case "turn.started": note(`turn ${data.turn_id} started`); break;
    case "turn.delta": {
      const found = state.open.assistant = textBlock(`msg:${data.item_id}`, "assistant streaming", "assistant");
      stickToBottom(() => { found.text.data += data.delta; });
      break;
    }
    case "turn.reasoning_delta": {
      const found = state.open.reasoning = textBlock(`rs:${data.item_id}`, "reasoning", "reasoning");
      stickToBottom(() => { found.text.data += data.delta; });
      break;
    }
    case "item.completed": onItem(data.item || {}); break;
    case "tool.started": {
      const found = callBlock(data.call_id, data.name, typeof data.arguments === "string" ? data.arguments : (data.arguments && data.arguments.cmd) || JSON.stringify(data.arguments));
      found.status.textContent = "running";
      break;
    }
    case "tool.output": {
      const found = callBlock(data.call_id, "tool", "");
      found.streamed = true;
      stickToBottom(() => found.output.append(document.createTextNode(data.chunk)));
      break;
    }
    case "tool.completed": {
      const found = callBlock(data.call_id, data.name, "");
      found.node.classList.remove("running");
      found.node.classList.add(data.ok ? "ok" : "failed");
      found.status.textContent = `${data.ok ? "ok" : "failed"} in ${(Number(data.duration_ms || 0) / 1000).toFixed(1)}s` + (data.exit_code != null ? `, exit ${data.exit_code}` : "");
      if (!found.streamed && data.output) found.output.textContent = data.output;
      break;
    }
    case "turn.diff": onDiff(data); break;
    case "approval.requested": onApprovalAsked(data); break;
    case "approval.resolved": {
      const found = state.blocks.get(`approval:${data.request_id}`);
      if (found) { found.actions.remove(); found.status.textContent = `approval: ${data.decision}${data.always ? " for this thread" : ""}`; }
      break;
    }
    case "turn.completed": note("turn completed"); break;
    case "turn.interrupted": note(`turn interrupted (${data.reason})`); break;
    case "turn.error": note(`turn failed: ${(data.error || {}).message || "error"}`, "error"); break;
    case "turn.retry": note(`model request failed (${short(data.reason, 120)}); retry ${data.attempt}/${data.max_retries} in ${Number(data.delay_s).toFixed(1)}s`); break;
    case "turn.waiting": note(`waiting: ${data.reason}`); break;
    case "input.queued": note(`input ${data.input_id} queued`); break;
    case "input.dropped": note(`input ${data.input_id} dropped: ${data.reason}`, "error"); break;
    case "subagent.spawned": note(`spawned sub-agent ${data.agent_id} (${data.agent_type})`); break;
    case "subagent.completed": note(`sub-agent ${data.agent_id} ${data.status}`); break;
    case "thread.killed": note("thread killed", "error"); break;
    case "thread.given_up": note(`worker given up: ${data.reason}`, "error"); break;
    case "thread.compacted": note("context compacted"); break;
    case "events.gap": note(`events ${data.from_seq}–${data.to_seq} are no longer kept (${data.reason})`); break;
    default: break;
  }
}

function onItem(item) {
  if (item.type === "message" && item.role === "user") {
    const node = el("div", "item user");
    node.append(el("span", "label", "user"), document.createTextNode(contentText(item)));
    add(node);
  } else if (item.type === "message" || item.type === "reasoning") {
    // A history item has no id: it completes the block its deltas streamed into, if any.
    const kind = item.type === "message" ? "assistant" : "reasoning";
    const text = contentText(item);
    const found = state.open[kind] || (text ? textBlock(`${kind}:${state.lastSeq}`, kind, kind) : null);
    state.open[kind] = null;
    if (found) {
      found.text.data = text;
      found.node.classList.remove("streaming");
      found.node.dataset.whole = "1";
    }
  } else if (item.type === "function_call" || item.type === "custom_tool_call") {
    const found = callBlock(item.call_id, item.name, argsText(item));
    found.head.textContent = `${item.name}(${short(argsText(item), 300)})`;
  }
}

function onDiff(data) {
  const node = el("div", "item diff");
  node.append(el("span", "label", `diff: ${(data.paths || []).join(", ")}${data.truncated ? " (truncated)" : ""}`));
  for (const line of String(data.diff || "").split("\n")) {
    const cls = line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : line.startsWith("@@") ? "hunk" : "";
    node.append(cls ? el("span", cls, line) : document.createTextNode(line + "\n"));
  }
  add(node);
}

function approvalButtons(requestId, rule) {
  const actions = el("div", "actions");
  const approve = el("button", "primary", "Approve");
  approve.dataset.approve = requestId;
  approve.addEventListener("click", () => decide(requestId, "approve"));
  actions.append(approve);
  if (Array.isArray(rule) && rule.length) {
    // "approve for this thread": the rule joins the thread's allow rules
    const always = el("button", "", "Approve for thread");
    always.dataset.always = requestId;
    always.title = `from now on, ${rule.join(" ")} runs in this thread without asking`;
    always.addEventListener("click", () => decide(requestId, "approve", true));
    actions.append(always);
  }
  const deny = el("button", "danger", "Deny");
  deny.dataset.deny = requestId;
  deny.addEventListener("click", () => decide(requestId, "deny"));
  actions.append(deny);
  return actions;
}

function onApprovalAsked(data) {
  block(`approval:${data.request_id}`, () => {
    const node = el("div", "item approval");
    const status = el("span", "label", `approval asked for ${data.tool}`);
    node.append(status, el("div", "summary mono", data.summary || JSON.stringify(data.arguments)));
    const actions = approvalButtons(data.request_id, data.rule);
    node.append(actions);
    return { node, status, actions };
  });
}

async function decide(requestId, decision, always = false) {
  const done = decision === "deny" ? "denied" : always ? "approved for this thread" : "approved";
  const result = await act("POST", `/api/approvals/${encodeURIComponent(requestId)}`, always ? { decision, always } : { decision }, done);
  if (result) {
    state.approvals = state.approvals.filter((a) => a.request_id !== requestId);
    renderApprovals();
  }
}

async function control(action) {
  if (!state.selected) return;
  if (action === "kill" && !confirm(`Kill ${state.selected} and its sub-agents for good?`)) return;
  const result = await act("POST", `/api/threads/${encodeURIComponent(state.selected)}/${action}`, {}, `${action}: done`);
  if (result && result.thread_id && state.threads.has(result.thread_id) && result.state) {
    state.threads.get(result.thread_id).state = result.state;
    renderHead(state.threads.get(result.thread_id));
  }
}

async function sendInput(event) {
  event.preventDefault();
  const text = $("input").value;
  if (!state.selected || !text.trim()) return;
  const mode = $("mode").value;
  const ack = await act("POST", `/api/threads/${encodeURIComponent(state.selected)}/send`, { text, mode });
  if (ack) {
    $("input").value = "";
    toast(`input ${ack.disposition}`);
  }
}

// ---- approvals and the blackboard -----------------------------------------------------------

function renderApprovals() {
  const list = $("approval-list");
  list.replaceChildren();
  for (const approval of state.approvals) {
    const card = el("div", "approval-card");
    card.dataset.requestId = approval.request_id;
    card.dataset.requestedAt = String(approval.requested_at || "");
    const meta = el("div", "meta");
    const link = el("a", "mono", approval.thread_id);
    link.href = "#";
    link.addEventListener("click", (event) => { event.preventDefault(); selectThread(approval.thread_id); });
    meta.append(el("span", "", `${approval.tool} · `), link, el("span", "age", ` waiting ${ago(approval.requested_at)}`));
    card.append(meta, el("div", "summary", approval.summary || JSON.stringify(approval.arguments)), approvalButtons(approval.request_id, approval.rule));
    list.append(card);
  }
  $("no-approvals").hidden = state.approvals.length > 0;
  $("approval-count").textContent = state.approvals.length ? String(state.approvals.length) : "";
}

async function loadBoard() {
  const entries = await act("GET", "/api/blackboard");
  if (!entries) return;
  state.board = new Map(entries.map((entry) => [entry.key, entry]));
  renderBoard();
}

function onBoardChange(change) {
  const current = state.board.get(change.key);
  if (current && current.version >= change.version) return;
  if (change.deleted) state.board.delete(change.key);
  else state.board.set(change.key, change);
  renderBoard(change.key);
}

function renderBoard(flashKey) {
  const body = $("board-rows");
  const prefix = $("board-filter").value;
  body.replaceChildren();
  const keys = [...state.board.keys()].filter((key) => key.startsWith(prefix)).sort();
  for (const key of keys) {
    const entry = state.board.get(key);
    const row = el("tr");
    row.dataset.key = key;
    if (key === flashKey) row.classList.add("flash");
    const value = JSON.stringify(entry.value);
    row.append(el("td", "mono", key), el("td", "value", short(value, 400)), el("td", "wide", entry.version), el("td", "wide mono", entry.writer || "client"), el("td", "", ago(entry.updated_at)));
    body.append(row);
  }
  $("no-board").hidden = state.board.size > 0;
}

// ---- tabs (a phone's width shows one pane at a time) ----------------------------------------

function showTab(name) {
  for (const tab of document.querySelectorAll(".tab")) tab.classList.toggle("active", tab.dataset.tab === name);
  for (const pane of document.querySelectorAll(".pane")) pane.classList.toggle("active", pane.id === name);
}

document.addEventListener("DOMContentLoaded", () => {
  for (const tab of document.querySelectorAll(".tab")) tab.addEventListener("click", () => showTab(tab.dataset.tab));
  $("filter").addEventListener("input", renderThreads);
  $("state-filter").addEventListener("change", renderThreads);
  $("board-filter").addEventListener("input", () => renderBoard());
  $("logout").addEventListener("click", logout);
  $("compose").addEventListener("submit", sendInput);
  $("input").addEventListener("keydown", (event) => { if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) sendInput(event); });
  for (const action of ["interrupt", "pause", "resume", "kill"]) $(`btn-${action}`).addEventListener("click", () => control(action));
  $("btn-replay").addEventListener("click", () => {  // an empty seq: the thread's last events again
    const raw = $("since").value.trim();
    if (state.selected) openStream(state.selected, raw === "" ? null : Math.max(0, Number(raw) || 0));
  });
  setInterval(tick, 1000);
  boot();
});
