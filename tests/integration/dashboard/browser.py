"""A real browser and a real dashboard process for the dashboard's tests.

* :func:`launch` — Debian's chromium (``/usr/bin/chromium``, never a browser
  downloaded by playwright) driven by playwright, headless, with a fresh
  profile and everything that would reach the network switched off. Missing
  chromium or playwright skips the tests — except in CI (``CI=true``) or with
  ``KUOTA_REQUIRE_CLUSTER=1``, where it is a failure;
* :class:`DashboardProcess` — ``kuota dashboard`` run as a child process on a
  free port of 127.0.0.1, read from the URL line it prints;
* :func:`artifacts` — where screenshots go: ``$KUOTA_TEST_ARTIFACTS/dashboard``,
  else a temporary directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path(os.environ.get("KUOTA_CHROMIUM", "/usr/bin/chromium"))
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
REPO = Path(__file__).resolve().parents[3]


def required() -> bool:
    return os.environ.get("KUOTA_REQUIRE_CLUSTER") == "1" or os.environ.get("CI") == "true"


def missing(why: str) -> None:
    if required():
        pytest.fail(f"{why} (required: CI=true or KUOTA_REQUIRE_CLUSTER=1; .ci/run installs "
                    "chromium)")
    pytest.skip(why)


def artifacts() -> Path:
    root = os.environ.get("KUOTA_TEST_ARTIFACTS")
    base = Path(root) if root else Path(tempfile.gettempdir()) / "kuota-test-artifacts"
    target = base / "dashboard"
    target.mkdir(parents=True, exist_ok=True)
    return target


@contextmanager
def launch() -> Iterator[Any]:
    """A browser context on a fresh profile (playwright's BrowserContext)."""
    if not CHROMIUM.exists():
        missing(f"{CHROMIUM} is not installed")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("playwright is not installed (pip install -e '.[dev]')")
    with tempfile.TemporaryDirectory(prefix="kuota-chromium-") as profile, \
            sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), headless=True, args=ARGS,
            viewport={"width": 1366, "height": 768})
        try:
            yield context
        finally:
            context.close()


class DashboardProcess:
    """``kuota dashboard`` as a child process; ``url`` once it listens."""

    def __init__(self, args: Sequence[str]) -> None:
        fd, name = tempfile.mkstemp(prefix="kuota-dashboard-", suffix=".log")
        self.log = Path(name)
        with os.fdopen(fd, "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "kuota.cli", "dashboard", "--listen", "127.0.0.1:0",
                 *args], stdout=subprocess.PIPE, stderr=log, text=True, cwd=REPO)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if "http://" not in line:
            self.stop()
            raise AssertionError(f"kuota dashboard did not start: {line!r}\n{self.errors()}")
        self.url = line.split()[2].rstrip("/")

    def errors(self) -> str:
        return self.log.read_text()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.unlink(missing_ok=True)


@contextmanager
def dashboard(*args: str) -> Iterator[DashboardProcess]:
    process = DashboardProcess(args)
    try:
        yield process
    finally:
        process.stop()


def wait_ready(url: str, timeout: float = 20.0) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{url}/healthz did not answer 200 within {timeout}s")
        time.sleep(0.1)
