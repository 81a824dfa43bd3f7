"""kuota installed on a real control plane, the way a platform engineer installs it.

:func:`install` applies the *shipped* manifests: the CRDs, ``rbac.yaml`` and
``webhook.yaml``'s MutatingWebhookConfiguration with only its clientConfig
rewritten to a 127.0.0.1 URL and the test CA (there is no cert-manager or
Service here; the operator runs on the host). :class:`OperatorProcess` runs
``kuota operator`` as a subprocess authenticated as its ServiceAccount with a
real bound token, so RBAC is exercised on every call.
"""

from __future__ import annotations

import base64
import contextlib
import os
import pathlib
import shutil
import subprocess
import sys
import time
import urllib.request
from typing import Any

import yaml

from tests.cluster.binaries import ROOT
from tests.cluster.controlplane import ControlPlane
from tests.cluster.orphans import detached_child
from tests.ports import free_port

OPERATOR_NAMESPACE = "kuota-system"


class Installation:
    """What :func:`install` set up: the webhook's port and certificate directory."""

    def __init__(self, plane: ControlPlane, webhook_port: int, cert_dir: pathlib.Path) -> None:
        self.plane = plane
        self.webhook_port = webhook_port
        self.cert_dir = cert_dir


def _docs(path: pathlib.Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def webhook_configuration(port: int, ca: pathlib.Path) -> dict[str, Any]:
    """The shipped MutatingWebhookConfiguration, pointed at https://127.0.0.1:PORT."""
    shipped = [d for d in _docs(ROOT / "manifests" / "operator" / "webhook.yaml")
               if d["kind"] == "MutatingWebhookConfiguration"]
    assert len(shipped) == 1, "webhook.yaml must hold one MutatingWebhookConfiguration"
    config = shipped[0]
    bundle = base64.b64encode(ca.read_bytes()).decode()
    for hook in config["webhooks"]:
        path = hook["clientConfig"]["service"].get("path", "/")
        hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": bundle}
    return config


def install(plane: ControlPlane) -> Installation:
    plane.kubectl("apply", "--server-side", "-f", str(ROOT / "manifests" / "crds"))
    plane.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
    plane.kubectl("create", "namespace", OPERATOR_NAMESPACE)
    port = free_port()
    cert_dir = plane.workdir / "webhook-certs"
    plane.ca.serving("tls", directory=cert_dir)
    apply_operator(plane, port)
    plane.wait_namespace_ready(OPERATOR_NAMESPACE)
    return Installation(plane, port, cert_dir)


def apply_operator(plane: ControlPlane, port: int) -> None:
    """``rbac.yaml`` and the webhook configuration pointed at 127.0.0.1:PORT (again, after
    a test installed kuota another way in their place, see :func:`remove_operator`)."""
    plane.kubectl("apply", "-f", str(ROOT / "manifests" / "operator" / "rbac.yaml"))
    plane.kubectl("apply", "-f", "-",
                  input=yaml.safe_dump(webhook_configuration(port, plane.ca.cert)))


def remove_operator(plane: ControlPlane) -> None:
    """Take away what :func:`apply_operator` made (the CRDs and the namespace stay)."""
    plane.kubectl("delete", "mutatingwebhookconfiguration", "kuota", "--ignore-not-found")
    plane.kubectl("delete", "--ignore-not-found", "-f",
                  str(ROOT / "manifests" / "operator" / "rbac.yaml"))


def _kuota_command() -> list[str]:
    script = pathlib.Path(sys.executable).parent / "kuota"
    return [str(script)] if script.exists() else [sys.executable, "-m", "kuota.cli"]


class OperatorProcess:
    """``kuota operator`` as its ServiceAccount; a context manager.

    Each test runs its own operator (stopped at its end), so no operator
    outlives a test and sees the next test's objects half-made.
    """

    def __init__(self, installation: Installation, workdir: pathlib.Path,
                 *args: str, env: dict[str, str] | None = None,
                 cert_dir: pathlib.Path | None = None, api_url: str | None = None) -> None:
        self.installation = installation
        self.cert_dir = cert_dir or installation.cert_dir
        self.api_url = api_url  # e.g. a fault proxy in front of the API server
        self.workdir = workdir
        self.args = list(args)
        self.env = env or {}
        self.log = workdir / "operator.log"
        self.probes = free_port()
        self.popen: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def __enter__(self) -> OperatorProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Start and wait for /readyz; a probe port someone took meanwhile is picked anew."""
        for _ in range(3):
            if self._start_once():
                return
            self.stop(kill=True)
            self.probes = free_port()
        raise AssertionError(f"kuota operator could not bind its ports:\n{self.tail()}")

    def _start_once(self) -> bool:
        plane = self.installation.plane
        kubeconfig = plane.service_account_kubeconfig(
            OPERATOR_NAMESPACE, "kuota-operator", self.workdir / "operator.kubeconfig",
            server=self.api_url)
        argv = [*_kuota_command(), "operator", "--lease", "none",
                "--webhook-listen", f"127.0.0.1:{self.installation.webhook_port}",
                "--webhook-cert-dir", str(self.cert_dir),
                "--probes", f"127.0.0.1:{self.probes}", "--status-interval", "0.5",
                *self.args]
        env = dict(os.environ, KUBECONFIG=str(kubeconfig), **self.env)
        env.pop("REDIS_URL", None)
        self.starts += 1
        with self.log.open("ab") as out:
            out.write(f"\n=== start {self.starts}: {' '.join(argv)}\n".encode())
            out.flush()
            offset = self.log.stat().st_size
            self.popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, env=env, cwd=ROOT,
                                          preexec_fn=detached_child())
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise AssertionError(f"kuota operator exited with {self.popen.returncode}:\n"
                                     f"{self.tail()}")
            with self.log.open("rb") as log:
                log.seek(offset)
                if f"{self.probes}): address already in use".encode() in log.read():
                    return False
            with contextlib.suppress(OSError):
                url = f"http://127.0.0.1:{self.probes}/readyz"
                with urllib.request.urlopen(url, timeout=1) as answer:
                    if answer.status == 200:
                        return True
            time.sleep(0.3)
        raise AssertionError(f"kuota operator not ready after 60 s:\n{self.tail()}")

    def stop(self, *, kill: bool = False) -> None:
        if self.popen is None or self.popen.poll() is not None:
            return
        if kill:
            self.popen.kill()
        else:
            self.popen.terminate()
        try:
            self.popen.wait(20)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(5)

    def restart(self, *, kill: bool = False) -> None:
        self.stop(kill=kill)
        self.start()

    def tail(self, lines: int = 60) -> str:
        if not self.log.exists():
            return "(no operator log)"
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def keep_logs(source: pathlib.Path, name: str) -> None:
    """Copy a failed test's logs where CI keeps artifacts ($KUOTA_TEST_ARTIFACTS)."""
    target = os.environ.get("KUOTA_TEST_ARTIFACTS")
    if target and source.exists():
        shutil.copytree(source, pathlib.Path(target) / name, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("etcd", "*.key"))


VISIBILITY_SAN = "kuota-visibility.kuota-system.svc"


class Visibility:
    """The shipped visibility API, pointed at an operator on the host.

    The APIService is the shipped one with the test CA as its bundle; its Service
    is an ExternalName Service for ``localhost`` (the aggregation layer resolves it
    like any name and dials ``localhost:PORT``) instead of the shipped selector
    Service, whose endpoints would be Pod IPs. The serving certificate names the
    shipped Service, as the API server checks. A context manager: the APIService
    is removed at exit, since an unanswered one makes API discovery fail."""

    def __init__(self, installation: Installation, *, kueue: bool = False) -> None:
        """``kueue``: Kueue's visibility group (manifests/kueue/visibility.yaml's
        APIServices) instead of kuota's, for an operator run with ``--api kueue``."""
        self.kueue = kueue
        self.apiservices: list[str] = []
        self.plane = installation.plane
        self.port = free_port()
        self.cert_dir = self.plane.workdir / "visibility-certs"
        self.plane.ca.serving("tls", directory=self.cert_dir,
                              hosts=("127.0.0.1", "localhost", VISIBILITY_SAN))

    def operator_args(self) -> list[str]:
        return ["--visibility-listen", f"127.0.0.1:{self.port}",
                "--visibility-cert-dir", str(self.cert_dir)]

    def __enter__(self) -> Visibility:
        shipped = _docs(ROOT / "manifests" / "operator" / "visibility.yaml")
        if self.kueue:
            shipped = [d for d in shipped if d["kind"] != "APIService"] + \
                _docs(ROOT / "manifests" / "kueue" / "visibility.yaml")
        docs = []
        for doc in shipped:
            if doc["kind"] == "Service":
                doc["spec"] = {"type": "ExternalName", "externalName": "localhost",
                               "ports": [{"name": "https", "port": self.port}]}
            elif doc["kind"] == "APIService":
                doc["metadata"].pop("annotations", None)  # no cert-manager here
                doc["spec"]["service"]["port"] = self.port
                doc["spec"]["caBundle"] = base64.b64encode(
                    self.plane.ca.cert.read_bytes()).decode()
                self.apiservices.append(doc["metadata"]["name"])
            docs.append(doc)
        self.plane.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
        return self

    def __exit__(self, *exc: object) -> None:
        self.plane.kubectl("delete", "apiservice", *self.apiservices, "--wait=false",
                           check=False)
        # Its ExternalName form must not outlive it: a later apply of the shipped
        # Service would merge both port lists into an invalid object.
        self.plane.kubectl("delete", "service", "kuota-visibility", "-n", OPERATOR_NAMESPACE,
                           "--ignore-not-found", "--wait=false", check=False)
