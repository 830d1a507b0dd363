"""``echs web`` at a terminal with a display: it opens the login link in the user's browser
(``$BROWSER`` here, a script that records what it was given) through a private file that
forwards to it, so the one-time code is never on a command line; the code it carries works."""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from tests.cli.helpers import ECHS, Serve, clean_env, free_port, run_in_pty, serving

WAIT_S = 15


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    yield from serving(tmp_path_factory.mktemp("echs-web") / "state", "--web", f"tcp://127.0.0.1:{free_port()}")


def test_echs_web_opens_the_link_through_a_private_file(daemon: Serve, tmp_path: Path) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    record = tmp_path / "browser-argv"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}.part && mv {record}.part {record}\n')
    browser.chmod(0o755)
    env = clean_env(daemon.state_dir.parent, BROWSER=str(browser), DISPLAY=":99", XDG_RUNTIME_DIR=str(runtime))
    code, screen, _ = run_in_pty([ECHS, "--state-dir", str(daemon.state_dir), "web"], env)
    text = screen.decode()
    assert code == 0, text
    assert "(opened in your browser)" in text
    url = re.search(r"(http://\S+#login=(\S+))", text)
    assert url is not None, text
    link, login = url.group(1), url.group(2)

    deadline = time.monotonic() + WAIT_S  # the browser runs after echs has exited
    while not record.exists():
        assert time.monotonic() < deadline, "the browser was not started"
        time.sleep(0.05)
    argv = record.read_text().split()
    opener = runtime / "echs-web-login.html"
    assert argv == [opener.as_uri()] and login not in " ".join(argv)  # the code is not on a command line
    assert stat.S_IMODE(os.stat(opener).st_mode) == 0o600
    assert f'content="0;url={link}"' in opener.read_text()

    origin = link.split("/#", 1)[0]
    answer = httpx.post(f"{origin}/api/login", json={"code": login}, headers={"Origin": origin}, timeout=WAIT_S)
    assert answer.status_code == 200 and answer.cookies  # the code it carried opens a session

    code, screen, _ = run_in_pty([ECHS, "--state-dir", str(daemon.state_dir), "web", "--no-open"], env)
    assert code == 0 and "#login=" in screen.decode() and "opened" not in screen.decode()
