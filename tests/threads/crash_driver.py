"""Child process for the SIGKILL crash test: a real daemon plus a driver making random turns.

Usage: python -m tests.threads.crash_driver STATE_DIR BASE_URL ACKS_FILE SEED

Every acknowledgement is appended to ACKS_FILE and fsync'ed before the driver goes on,
then ``ACK <n>`` is printed, so the parent knows exactly what was acknowledged when it
kills this process. The parent kills at random points; nothing here ever exits by itself.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path
from typing import Any

import trio

from echsd.daemon import Daemon
from echsd.errors import EchsError
from tests.helpers import make_settings, mock_directive


def random_script(rng: random.Random, workdir: str) -> str:
    steps: list[dict[str, Any]] = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.random()
        if kind < 0.5:
            calls = [
                {"name": "exec_command", "arguments": {"cmd": rng.choice(["echo hi", "sleep 0.05; echo slow", "ls", "exit 2"])}}
                for _ in range(rng.randint(1, 3))
            ]
            steps.append({"calls": calls, "text": "calling"} if rng.random() < 0.3 else {"calls": calls})
        elif kind < 0.8:
            steps.append({"text": " ".join(f"t{i}" for i in range(rng.randint(5, 60))), "delay_ms": rng.choice([0, 1, 3])})
        else:
            steps.append({"reasoning": "think", "text": "short"})
    return f"work in {workdir}\n" + mock_directive(steps)


async def drive(daemon: Daemon, acks_path: Path, rng: random.Random, workdir: str) -> None:
    service = daemon.ops
    assert service is not None
    threads = [t["thread_id"] for t in await service.list_threads() if t["state"] != "killed"]
    while len(threads) < 3:
        threads.append((await service.create_thread(cwd=workdir))["thread_id"])
    count = 0
    with open(acks_path, "a") as acks:
        print("READY", flush=True)
        while True:
            tid = rng.choice(threads)
            action = rng.random()
            try:
                if action < 0.75:
                    mode = rng.choice(["send", "send", "queue", "steer"])
                    client_msg_id = f"c{rng.randrange(10**9)}" if rng.random() < 0.5 else None
                    ack = await service.send(tid, random_script(rng, workdir), mode=mode, client_msg_id=client_msg_id)
                    acks.write(json.dumps({"thread_id": tid, **ack}) + "\n")
                    acks.flush()
                    os.fsync(acks.fileno())
                    count += 1
                    print(f"ACK {count}", flush=True)
                elif action < 0.85:
                    await service.interrupt(tid)
                elif action < 0.92:
                    await service.pause(tid)
                else:
                    await service.resume(tid)
            except EchsError as exc:
                print(f"ERR {exc.code}", flush=True)
            await trio.sleep(rng.choice([0, 0.001, 0.01, 0.03]))  # pacing of a random client, not synchronisation


async def main() -> None:
    state_dir, base_url, acks, seed = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
    workdir = Path(state_dir).parent / "work"
    workdir.mkdir(exist_ok=True)
    daemon = Daemon(make_settings(Path(state_dir), base_url))
    async with trio.open_nursery() as nursery:
        await nursery.start(daemon.run)
        await drive(daemon, acks, random.Random(seed), str(workdir))


if __name__ == "__main__":
    trio.run(main)
