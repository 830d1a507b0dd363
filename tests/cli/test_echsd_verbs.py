"""The ``echsd`` admin verbs' own manners: each shows only the options it uses, and
``token`` says so when it creates a state directory (a typo would go unnoticed)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cli.helpers import ECHSD, clean_env


def echsd(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ECHSD, *args], capture_output=True, text=True, env=clean_env(home), timeout=60)


def test_each_verb_lists_only_the_options_it_uses(tmp_path: Path) -> None:
    probe = echsd(tmp_path, "probe", "--help").stdout
    assert "--provider" in probe and "--base-url" in probe and "--model" in probe
    for unused in ("--listen", "--allow-remote", "--store", "--node-id"):
        assert unused not in probe, unused
    vacuum = echsd(tmp_path, "vacuum", "--help").stdout
    assert "--state-dir" in vacuum and "--store" in vacuum and "--provider" not in vacuum and "--listen" not in vacuum
    serve = echsd(tmp_path, "serve", "--help").stdout
    assert all(flag in serve for flag in ("--listen", "--allow-remote", "--store", "--node-id", "--provider", "--app-server"))


def test_token_says_when_it_creates_the_state_dir(tmp_path: Path) -> None:
    typo = tmp_path / "typo"
    created = echsd(tmp_path, "token", "--state-dir", str(typo))
    assert created.returncode == 0 and len(created.stdout.strip()) >= 32  # stdout: the token alone
    assert f"created {typo}: no daemon has used it yet" in created.stderr
    again = echsd(tmp_path, "token", "--state-dir", str(typo))
    assert again.stdout == created.stdout and again.stderr == ""


def test_a_malformed_base_url_is_refused_in_one_line_by_serve_and_probe(tmp_path: Path) -> None:
    for url, reason in (
        ("http://127.0.0.1:abc/v1", "port 'abc' is not a number"),
        ("http://127.0.0.1:/v1", "port '' is not a number"),  # a port variable left empty
        ("http://127.0.0.1:70000/v1", "port 70000 is out of range"),
        ("http:///v1", "it has no host"),
        ("http://[::1/v1", "not a valid URL"),
        ("ftp://example.com/v1", "http:// or https://"),
    ):
        for verb in ("serve", "probe"):
            result = echsd(tmp_path, verb, "--state-dir", str(tmp_path / "state"), "--provider", "openai", "--base-url", url)
            assert result.returncode == 2, (verb, url, result.stderr)
            (line,) = result.stderr.splitlines()
            assert line.startswith("echsd: invalid setting 'base_url' from --base-url: expected an http(s) URL (")
            assert reason in line and line.endswith(f"(got {url!r})"), (verb, line)
            assert "Traceback" not in result.stderr and not (tmp_path / "state" / "echsd.sock").exists()
