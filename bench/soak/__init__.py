"""The soak: ``make soak`` (``DURATION=30m`` by default; not in CI).

A real ``echsd serve --provider mock`` on a fresh state dir gets mixed traffic for the
whole duration: 100 drivers, one per thread, each doing over and over what a busy user
does (``driver``): turns with tools (exec_command, apply_patch, read_file), streamed
replies, input queued and steered into a running turn, interrupts, pauses, kills of a
thread while its tool runs, and sub-agents (spawn_agent and wait_agents, each child
scripted by its own first message) which are then killed or deleted. Around them
(``watchers``): followers that reconnect every minute or so and resume by ``since``,
checking each event is the next seq; a client that reads slowly and one that never
reads; driver connections swapped mid-request. Every few minutes the daemon is
restarted, a third of the time with SIGKILL.

Every few seconds the daemon's RSS, open descriptors, OS threads, database and WAL size,
thread counts, live tool processes and the latencies since the last sample (p50/p99 of a
``status`` round trip, of a ``thread.send`` acknowledged, and of a live ``turn.delta`` from
the daemon's stamp to a follower) are written to ``samples.jsonl``. Checked all along
(a breach is written to ``violations.jsonl`` with what is needed to look into it):
a tool's processes are gone within 10 s of an interrupt, pause or kill, of a graceful
stop, and of a restart after SIGKILL (including processes that called ``setsid``); a
graceful stop takes under 10 s; no request hangs or answers ``internal``; every thread
settles; followed streams have no hole and no repeat. At the end, after a drain and a
graceful stop, the store is checked thread by thread as the crash-recovery test does:
seqs contiguous, history items matching their ``item.completed`` events, every
function_call answered exactly once, every acknowledged input delivered or dropped
exactly once, no client_msg_id stored twice. ``summary.json`` has it all; the printed summary ends
with ``RESULT: PASS`` or ``RESULT: FAIL (kinds)``, and the exit status is 1 on a failure.
"""
