"""Clients pointed at an emulator: kubeconfig, the real ``kubectl``, the ``kubernetes`` client.

kubectl runs as a subprocess with its own kubeconfig, ``--cache-dir`` and
``HOME`` inside a test's temporary directory, so it never reads or writes
``~/.kube`` and its discovery cache never leaks between tests or emulators.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import os
import pathlib
import queue
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

import yaml

from tests.cluster.binaries import kubectl_path

KUBECTL = kubectl_path() or "/usr/bin/kubectl"


def kubeconfig(url: str, *, namespace: str = "default", name: str = "emulator") -> dict[str, Any]:
    """A kubeconfig document for a plain-HTTP emulator, with no credentials."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": url}}],
        "users": [{"name": name, "user": {}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name,
                                                "namespace": namespace}}],
        "current-context": name,
    }


def write_kubeconfig(url: str, path: pathlib.Path, **options: Any) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(kubeconfig(url, **options)))
    return path


class Kubectl:
    """The real kubectl against one emulator, isolated in ``workdir``."""

    def __init__(self, url: str, workdir: pathlib.Path, *, binary: str = KUBECTL) -> None:
        self.workdir = workdir
        self.binary = binary
        self.config = write_kubeconfig(url, workdir / "kubeconfig")
        self.cache = workdir / "kube-cache"
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(workdir),
                    "KUBECONFIG": str(self.config), "KUBECTL_EXTERNAL_DIFF": ""}

    def command(self, *args: str) -> list[str]:
        return [self.binary, f"--kubeconfig={self.config}", f"--cache-dir={self.cache}",
                "--request-timeout=20s", *args]

    def run(self, *args: str, input: str | None = None, timeout: float = 30,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run kubectl to the end; with ``check`` a failure raises with its stderr."""
        done = subprocess.run(self.command(*args), input=input, capture_output=True, text=True,
                              timeout=timeout, env=self.env, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({done.returncode}):\n"
                                 f"{done.stderr}{done.stdout}")
        return done

    def manifest(self, name: str, *objs: dict[str, Any]) -> pathlib.Path:
        """Write objects as a multi-document YAML file in the work directory."""
        path = self.workdir / name
        path.write_text(yaml.safe_dump_all(objs))
        return path

    def start(self, *args: str) -> subprocess.Popen[str]:
        """Start a long-running kubectl (``get -w``); the caller stops it."""
        return subprocess.Popen(self.command(*args), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=self.env)


def api_client(url: str) -> Any:
    """A ``kubernetes.client.ApiClient`` talking to the emulator."""
    import kubernetes.client

    configuration = kubernetes.client.Configuration()
    configuration.host = url
    return kubernetes.client.ApiClient(configuration)


@dataclasses.dataclass(frozen=True)
class Reply:
    """An HTTP answer: status, headers and the decoded JSON body (None if not JSON)."""

    status: int
    headers: dict[str, str]
    data: Any


def call(url: str, method: str, path: str, body: Any = None, *,
         content_type: str = "application/json", headers: dict[str, str] | None = None,
         timeout: float = 10) -> Reply:
    """One raw request, for checking status codes and bodies exactly."""
    payload = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=payload, method=method,
                                     headers={"Content-Type": content_type, **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            status, raw, reply_headers = answer.status, answer.read(), dict(answer.headers)
    except urllib.error.HTTPError as exc:
        status, raw, reply_headers = exc.code, exc.read(), dict(exc.headers)
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        data = None
    return Reply(status, reply_headers, data)


class WatchStream:
    """A raw watch request read event by event, with a timeout per event."""

    def __init__(self, url: str, path: str, *, timeout: float = 5,
                 headers: dict[str, str] | None = None) -> None:
        parsed = urllib.parse.urlsplit(url)
        self._conn = http.client.HTTPConnection(parsed.hostname or "127.0.0.1", parsed.port,
                                                timeout=timeout)
        self._conn.request("GET", path, headers=headers or {})
        self.response = self._conn.getresponse()

    def next(self) -> dict[str, Any] | None:
        """The next event, or None when the server ended the stream."""
        line = self.response.readline()
        return json.loads(line) if line.strip() else None

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> WatchStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LineReader:
    """Lines of a running process's stdout, read in a thread so a test can wait with a timeout."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def until(self, predicate: Callable[[str], bool], timeout: float = 10) -> str:
        """Wait for the first new line that satisfies ``predicate`` and return it."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"no matching line within {timeout}s; got {self.lines!r}")\
                    from None
            if line is None:
                raise EOFError(f"the process ended; got {self.lines!r}")
            self.lines.append(line)
            if predicate(line):
                return line

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
        self._thread.join(5)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
