"""``kuota dashboard``'s arguments: where it listens, and the inputs it refuses."""

from __future__ import annotations

import argparse

import pytest

from kuota import cli
from kuota.commands import dashboard


@pytest.mark.parametrize(("text", "want"), [
    pytest.param("127.0.0.1:8080", ("127.0.0.1", 8080), id="ipv4"),
    pytest.param("localhost:0", ("localhost", 0), id="free port"),
    pytest.param("[::1]:9000", ("::1", 9000), id="ipv6 in brackets"),
])
def test_listen_address(text: str, want: tuple[str, int]) -> None:
    assert dashboard.listen_address(text) == want


@pytest.mark.parametrize("text", ["8080", "host:", ":8080", "host:http", "host:70000"])
def test_bad_listen_address(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="is not HOST:PORT"):
        dashboard.listen_address(text)


@pytest.mark.parametrize(("host", "want"), [
    ("127.0.0.1", True), ("127.9.9.9", True), ("::1", True), ("localhost", True),
    ("0.0.0.0", False), ("192.168.1.10", False), ("dashboard.example", False),
])
def test_loopback(host: str, want: bool) -> None:
    assert dashboard.loopback(host) is want


@pytest.mark.parametrize(("argv", "want_err"), [
    pytest.param(["--context", "c"], "--context needs --kubeconfig", id="context alone"),
    pytest.param(["--kubeconfig", "k", "--redis", "redis://127.0.0.1:1/0"],
                 "--redis and --kubeconfig: choose one store", id="two stores"),
    pytest.param(["--interval", "0"], "--interval 0.0: must be more than 0 seconds",
                 id="no interval"),
    pytest.param(["--kubeconfig", "/nonexistent/kubeconfig"], "--kubeconfig /nonexistent",
                 id="unreadable kubeconfig"),
])
def test_invalid_input_is_one_line_and_status_2(argv: list[str], want_err: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["dashboard", *argv]) == 2
    err = capsys.readouterr().err
    assert want_err in err and err.count("\n") == 1
