"""Which store a command uses is never a surprise (issue 12, scope 5).

``--redis`` defaults to ``$REDIS_URL``, else ``redis://localhost:6379/0``; the in-process
store is used only with ``--redis embedded``, which says so on stderr. A store that cannot
be reached is one line naming its URL — never its password.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from store_builders import QUEUES

from kuota import cli
from kuota.client import Client
from kuota.service import connection


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(("flag", "env", "want_url"), [
    (None, None, "redis://localhost:6379/0"),
    (None, "redis://env:6379/1", "redis://env:6379/1"),
    ("redis://flag:6379/2", "redis://env:6379/1", "redis://flag:6379/2"),
    ("embedded", "redis://env:6379/1", "embedded"),
])
def test_the_store_is_the_flag_else_redis_url_else_localhost(
        monkeypatch: pytest.MonkeyPatch, flag: str | None, env: str | None,
        want_url: str) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    if env is not None:
        monkeypatch.setenv("REDIS_URL", env)
    assert connection.resolve_url(flag) == want_url


def test_a_client_without_a_url_does_not_fall_back_to_a_private_store(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    client = Client()
    assert (client.connection.url, client.connection.embedded) == (
        "redis://localhost:6379/0", False)
    assert Client("embedded").connection.embedded


@pytest.mark.parametrize(("url", "want_shown"), [
    ("redis://:s3cret@host:6379/0", "redis://:***@host:6379/0"),
    ("redis://alice:s3cret@host:6379/0", "redis://alice:***@host:6379/0"),
    ("rediss://bob:p%40ss@host/3", "rediss://bob:***@host/3"),
    ("redis://host:6379/0", "redis://host:6379/0"),
    ("embedded", "the embedded store"),
])
def test_urls_are_shown_without_their_password(url: str, want_shown: str) -> None:
    assert connection.redact(url) == want_shown


def test_apply_without_a_reachable_redis_fails_in_one_line_naming_the_url(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 12: it printed `configured` and exited 0, storing into a private store."""
    port = _closed_port()
    monkeypatch.setenv("REDIS_URL", f"redis://admin:hunter2@127.0.0.1:{port}/0")
    (tmp_path / "q.yaml").write_text(QUEUES)
    status = cli.main(["apply", "-f", str(tmp_path / "q.yaml")])
    out, err = capsys.readouterr()
    assert (status, out) == (1, "")
    assert err.startswith(f"error: cannot reach Redis at redis://admin:***@127.0.0.1:{port}/0: ")
    assert len(err.strip().splitlines()) == 1
    assert "hunter2" not in err


def test_the_default_url_is_tried_when_nothing_is_given(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    default = f"redis://127.0.0.1:{_closed_port()}/0"
    monkeypatch.setattr(connection, "DEFAULT_URL", default)
    assert cli.main(["get", "workloads"]) == 1
    assert capsys.readouterr().err.startswith(f"error: cannot reach Redis at {default}: ")


def test_the_embedded_store_is_asked_for_by_name_and_announced(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "q.yaml").write_text(QUEUES)
    status = cli.main(["apply", "-f", str(tmp_path / "q.yaml"), "--redis", "embedded",
                       "--prefix", "cli-embedded"])
    out, err = capsys.readouterr()
    assert status == 0
    assert "ClusterQueue/cq created" in out
    assert err.startswith("note: --redis embedded: using an in-process store")


def test_status_says_the_embedded_store_lives_only_as_long_as_its_process(
        capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert cli.main(["status", "--redis", "embedded", "-o", "json"]) == 1  # (no scheduler)
    store = json.loads(capsys.readouterr().out)["store"]
    assert store == {"url": "embedded fakeredis (this process only)", "master": None,
                     "version": None, "server": None,
                     "mayLoseWrites": "it lives only as long as this process"}


def test_the_note_after_a_submission_never_fails_the_command(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 42: `kuota submit` looks for a leader after storing the workload; Redis gone
    by then must not fail a command whose submission is stored (it would be sent again)."""
    from kuota.service.cli import warn_without_scheduler

    warn_without_scheduler(Client(f"redis://127.0.0.1:{_closed_port()}/0"), submitted=True)
    assert capsys.readouterr().err.startswith("note: cannot tell whether a scheduler leads: ")
