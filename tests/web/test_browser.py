"""The web view in real headless Chromium (Debian's chromium and chromium-driver, driven by
Selenium with the system browser), against a real ``echsd serve --web`` subprocess, logged
in through the one-time link of a real ``echs web``.

One browser walks the steps in order: log in; a parent with two children in the tree; a
reply that streams in; a steer; an interrupt; an approval answered and its command run; a
blackboard change appearing live; a turn's diff; a long thread opened at its end and paged
back to its start; then the same page at a phone's width. Each step saves a
screenshot under ``ECHS_SCREENSHOTS`` (default: the test's tmp dir, printed).

Skipped, saying why, where no Chromium is installed (``make test`` installs it where it can);
``ECHS_CHROMIUM`` and ``ECHS_CHROMEDRIVER`` name other binaries.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.cli.helpers import Serve, echs, free_port, new_thread, serving
from tests.helpers import mock_directive
from tests.workspace.gitrepo import make_repo

TAIL_EVENTS = 500  # the page's tail (app.js TAIL_EVENTS)

CHROMIUM = os.environ.get("ECHS_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = os.environ.get("ECHS_CHROMEDRIVER") or shutil.which("chromedriver") or "/usr/bin/chromedriver"
MISSING = [path for path in (CHROMIUM, DRIVER) if not os.access(path, os.X_OK)]
pytestmark = pytest.mark.skipif(
    bool(MISSING), reason=f"no Chromium here ({', '.join(MISSING)} missing): install Debian's chromium and chromium-driver"
)
WAIT_S = 15
DESKTOP, PHONE = (1280, 860), (390, 844)


def paced(words: int, delay_ms: int, first: str = "word") -> dict[str, Any]:
    """A reply that streams one word every ``delay_ms``."""
    return {"text": " ".join(f"{first}{index}" for index in range(words)), "delay_ms": delay_ms}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    yield from serving(tmp_path_factory.mktemp("browser") / "state", "--web", f"tcp://127.0.0.1:{free_port()}")


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium never fetches a driver or a browser
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tmp_path_factory.mktemp("chromium-profile")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", f"--user-data-dir={profile}",
                 f"--window-size={DESKTOP[0]},{DESKTOP[1]}"):  # fmt: skip
        options.add_argument(flag)
    browser = webdriver.Chrome(service=Service(DRIVER), options=options)
    browser.set_window_size(*DESKTOP)
    yield browser
    browser.quit()


class Page:
    def __init__(self, driver: Any, shots: Path) -> None:
        from selenium.webdriver.support.ui import WebDriverWait

        self.driver = driver
        self.shots = shots
        self.count = 0
        self._wait = WebDriverWait(driver, WAIT_S, poll_frequency=0.05)

    def until(self, condition: Callable[[Any], Any], message: str) -> Any:
        from selenium.common.exceptions import TimeoutException

        try:
            return self._wait.until(lambda driver: condition(driver), message)
        except TimeoutException:
            self.shot("failed")  # what the page showed when it did not happen
            raise

    def find(self, css: str) -> Any:
        return self.until(lambda d: d.find_element("css selector", css), f"no {css}")

    def all(self, css: str) -> list[Any]:
        return list(self.driver.find_elements("css selector", css))

    def shot(self, name: str) -> Path:
        self.count += 1
        path = self.shots / f"{self.count:02d}-{name}.png"
        assert self.driver.save_screenshot(str(path)), path
        return path

    def select(self, thread_id: str) -> None:
        self.find(f'tr.thread-row[data-thread-id="{thread_id}"]').click()
        self.until(lambda d: d.find_element("tag name", "body").get_attribute("data-stream-ready") == thread_id, "the thread's stream did not open")

    def send(self, text: str, mode: str = "send") -> None:
        from selenium.webdriver.support.ui import Select

        box = self.find("#input")
        box.clear()
        self.driver.execute_script("arguments[0].value = arguments[1];", box, text)  # a long directive, at once
        Select(self.find("#mode")).select_by_value(mode)
        self.find("#btn-send").click()
        self.until(lambda d: d.find_element("id", "input").get_attribute("value") == "", "the input was not accepted")

    def stream_text(self) -> str:
        return str(self.find("#stream").text)

    def reply(self) -> str:
        """The text of the last assistant message shown (streamed or whole)."""
        replies = self.all("#stream .item.assistant")
        return str(replies[-1].text) if replies else ""


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chosen = os.environ.get("ECHS_SCREENSHOTS")
    path = Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    print(f"screenshots: {path}")
    return path


def test_the_web_view_end_to_end(daemon: Serve, driver: Any, shots: Path, tmp_path: Path) -> None:
    state = daemon.state_dir
    page = Page(driver, shots)
    parent = new_thread(state, "--cwd", str(tmp_path))
    children = [new_thread(state, "--cwd", str(tmp_path), "--parent", parent) for _ in range(2)]
    echs(state, "config", children[1], "approval=always")

    # log in through the one-time link `echs web` prints
    login = json.loads(echs(state, "web", "--json").stdout)
    driver.get(login["url"])
    page.until(lambda d: d.find_element("tag name", "body").get_attribute("data-ready") == "1", "the page did not log in")
    assert "#login" not in driver.current_url  # the code is out of the address bar and history
    assert driver.get_cookies() and all(cookie["httpOnly"] and cookie["sameSite"] == "Strict" for cookie in driver.get_cookies())
    page.shot("logged-in")

    # the tree: the parent, its two children under it
    page.until(lambda d: len(d.find_elements("css selector", "tr.thread-row")) >= 3, "the threads did not appear")
    order = [row.get_attribute("data-thread-id") for row in page.all("tr.thread-row")]
    assert order[order.index(parent) + 1 : order.index(parent) + 3] == children
    for child in children:
        assert page.find(f'tr.thread-row[data-thread-id="{child}"] .twig').text.strip() in ("├─", "└─")
    page.shot("tree")
    page.find("#filter").send_keys(children[1][-6:])  # filterable: by id, name, model, state, what it waits on
    page.until(lambda d: [r.get_attribute("data-thread-id") for r in page.all("tr.thread-row")] == [children[1]], "the filter did not apply")
    page.find("#filter").clear()
    page.driver.execute_script("document.getElementById('filter').dispatchEvent(new Event('input'))")
    page.until(lambda d: len(page.all("tr.thread-row")) >= 3, "the filter did not clear")

    # a reply that streams in: seen part-way, then whole
    page.select(children[0])
    page.send(mock_directive(paced(12, 150, "alpha")))
    page.until(lambda d: "alpha2" in page.reply() and "alpha11" not in page.reply(), "the reply did not stream")
    page.shot("streaming")
    page.until(lambda d: "alpha11" in page.reply() and "turn completed" in page.stream_text(), "the reply did not finish")
    assert not page.all("#stream .item.assistant.streaming")

    # a steer joins the running turn
    page.send(mock_directive(paced(30, 150, "beta")))
    page.until(lambda d: "beta1" in page.reply(), "the second reply did not start")
    page.send("please also say gamma", mode="steer")
    page.until(lambda d: "mock reply to: please also say gamma" in page.stream_text(), "the steer was not answered")
    assert page.stream_text().count("turn completed") == 2 and page.stream_text().count(" started") == 2  # one turn took it
    page.shot("steered")

    # interrupt a turn that streams
    page.send(mock_directive(paced(200, 100, "delta")))
    page.until(lambda d: "delta2" in page.reply(), "the reply to interrupt did not start")
    page.find("#btn-interrupt").click()
    page.until(lambda d: "turn interrupted (interrupt)" in page.stream_text(), "the turn was not interrupted")
    assert "delta199" not in page.reply()
    page.shot("interrupted")

    # replay from a seq: the stream shows what came after it, no more
    seqs = [event["seq"] for event in map(json.loads, echs(state, "events", children[0], "--json").stdout.splitlines())]
    steer_seq = next(seq for seq, line in zip(seqs, echs(state, "events", children[0], "--json").stdout.splitlines()) if "please also say gamma" in line)
    since = page.find("#since")
    since.clear()
    since.send_keys(str(steer_seq - 1))
    page.find("#btn-replay").click()
    page.until(lambda d: f"replaying from seq {steer_seq}" in page.stream_text() and "turn interrupted" in page.stream_text(), "no replay")
    assert "alpha0" not in page.stream_text() and "please also say gamma" in page.stream_text()
    page.shot("replayed")

    # an approval: pending in the list, approved there, and the command runs
    marker = tmp_path / "approved.txt"
    page.select(children[1])
    page.send(mock_directive([{"calls": [{"name": "exec_command", "arguments": {"cmd": f"echo ran-after-approval | tee {marker}"}}]}, {"text": "ok"}]))
    card = page.find("#approval-list .approval-card")
    assert children[1] in card.text and "ran-after-approval" in card.text
    assert page.find("#approval-count").get_attribute("textContent") == "1"  # (its tab shows at a phone's width)
    page.shot("approval-pending")
    card.find_element("css selector", "button[data-approve]").click()
    page.until(lambda d: "ran-after-approval" in page.find("#stream .item.tool .output").text, "the approved command did not run")
    page.until(lambda d: "turn completed" in page.stream_text(), "the turn did not finish")
    assert marker.read_text().strip() == "ran-after-approval"
    page.until(lambda d: not d.find_elements("css selector", "#approval-list .approval-card"), "the approval stayed listed")
    page.shot("approved")

    # approved for the thread: its command prefix runs without asking from then on
    touch = [{"calls": [{"name": "exec_command", "arguments": {"cmd": f"touch {name}", "prefix_rule": ["touch"]}}]} for name in ("one", "two")]
    page.send(mock_directive([*touch, {"text": "touched"}]))
    card = page.find("#approval-list .approval-card")
    assert "touch one" in card.text
    page.shot("approval-for-thread")
    card.find_element("css selector", "button[data-always]").click()
    page.until(lambda d: page.stream_text().count("turn completed") == 2 and "touched" in page.reply(), "the turn did not finish")
    assert (tmp_path / "one").exists() and (tmp_path / "two").exists()
    assert "approval: approve for this thread" in page.stream_text().lower()  # (labels show in capitals)
    assert not page.all("#approval-list .approval-card")
    assert json.loads(echs(state, "show", children[1], "--json").stdout)["config"]["approval_allow"] == [["touch"]]
    page.shot("approved-for-thread")

    # a blackboard change appears live
    echs(state, "bb", "set", "team/plan", '{"steps": ["parse", "test"]}')
    row = page.find('#board-rows tr[data-key="team/plan"]')
    assert "parse" in row.text
    echs(state, "bb", "set", "team/plan", '{"steps": ["parse", "test", "ship"]}')
    page.until(lambda d: "ship" in page.find('#board-rows tr[data-key="team/plan"]').text, "the change did not appear")
    page.shot("blackboard")

    # a turn's diff, in a thread with a worktree of its own
    repo = make_repo(tmp_path / "repo")
    isolated = new_thread(state, "--cwd", str(repo), "--worktree")
    page.until(lambda d: d.find_elements("css selector", f'tr.thread-row[data-thread-id="{isolated}"]'), "the new thread did not appear")
    page.select(isolated)
    page.until(lambda d: "worktree: " in page.find("#thread-worktree").text, "the worktree is not shown")
    patch = "*** Begin Patch\n*** Add File: notes.txt\n+hello from the page\n*** End Patch\n"
    page.send(mock_directive([{"calls": [{"name": "apply_patch", "arguments": {"input": patch}}]}, {"text": "noted"}]))
    diff = page.find("#stream .item.diff")
    assert "notes.txt" in diff.text and "+hello from the page" in diff.text
    assert not (repo / "notes.txt").exists()  # in the thread's worktree, not the user's tree
    page.shot("diff")

    # a long thread opens at its last events, says the earlier ones are not shown, and loads them a page at a time
    long = new_thread(state, "--cwd", str(tmp_path))
    page.until(lambda d: d.find_elements("css selector", f'tr.thread-row[data-thread-id="{long}"]'), "the long thread did not appear")
    page.select(long)
    page.send(mock_directive(paced(1500, 2, "many")))  # a delta (an event) a word
    page.until(lambda d: "turn completed" in page.stream_text(), "the long turn did not finish")
    page.send(mock_directive({"text": "omega"}))
    page.until(lambda d: page.stream_text().count("turn completed") == 2 and page.find("#thread-state").text == "idle", "the short turn did not finish")
    page.select(long)  # opened again: from its tail
    events = [json.loads(line) for line in echs(state, "events", long, "--json").stdout.splitlines()]
    tail = events[-TAIL_EVENTS:]
    since = 0 if len(events) < TAIL_EVENTS else min([e["seq"] for e in tail if e["event"] == "turn.started"] or [tail[0]["seq"]]) - 1
    assert since > 0  # the daemon's choice, worked out from the log: the last 500 events, from the earliest turn start among them
    body = page.find("body")
    page.until(lambda d: body.get_attribute("data-earlier") == str(since), f"the page does not say events 1-{since} are not shown")
    assert f"Events 1–{since} are not shown." in page.find("#earlier").text
    users = [e["seq"] for e in events if e["event"] == "item.completed" and e["data"]["item"].get("role") == "user"]
    assert len(page.all("#stream .item.user")) == len([seq for seq in users if seq > since]) and "omega" in page.stream_text()
    page.shot("tail")
    for _ in range(5):  # each click: a page further back
        if body.get_attribute("data-earlier") == "0":
            break
        shown = body.get_attribute("data-earlier")
        page.find("#btn-earlier").click()
        page.until(lambda d: body.get_attribute("data-earlier") != shown, "no earlier page loaded")
    assert body.get_attribute("data-earlier") == "0" and not page.all("#earlier")
    text = page.stream_text()
    assert len(page.all("#stream .item.user")) == len(users) and text.count("turn completed") == 2
    assert 0 <= text.index("many0") < text.index("many1499") < text.index("omega")
    replies = [node.text for node in page.all("#stream .item.assistant")]  # a reply split across pages shows once, whole
    assert len([reply for reply in replies if "many0 " in reply]) == 1 and not page.all("#stream .streaming")
    page.shot("earlier-loaded")

    # a phone's width: one pane at a time, with tabs
    driver.set_window_size(*PHONE)
    page.until(lambda d: page.find("#tabs").is_displayed(), "no tabs at a phone's width")
    assert not page.find("#threads").is_displayed() and page.find("#thread").is_displayed()
    page.shot("phone-thread")
    page.find('.tab[data-tab="threads"]').click()
    page.until(lambda d: page.find("#threads").is_displayed(), "the threads tab did not open")
    width = driver.execute_script("return document.documentElement.scrollWidth")
    assert width <= PHONE[0] + 1, f"the page is {width}px wide at a phone's width"
    page.shot("phone-threads")
    page.find('.tab[data-tab="board"]').click()
    page.shot("phone-board")
    driver.set_window_size(*DESKTOP)
