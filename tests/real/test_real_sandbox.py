"""``make sandbox`` (hack/sandbox/sandbox.py) run as a user runs it, driven from outside.

The sandbox starts its own control plane, so this module does not use the session's
(the autouse cleanup fixture that would start it is replaced below). Per pinned
version whose binaries are built:

* it is ready (``--ready-file``) and ``kubectl get cq`` works with the KUBECONFIG it
  prints within :data:`READY_WITHIN` seconds of starting — the issue's target with
  the binaries cached (the time is printed: ``pytest -s`` shows it);
* the quick start of docs/operator.md works there as written — its commands are read
  from the doc's code blocks (tests/markdown_blocks.py) and run in order, with the
  exports it prints: the sample queues, Kueue-style Jobs admitted through the webhook
  (the CPU one on the cpu flavor, the GPU one on gpu-a100 with its node label), a Job
  that does not fit listed by ``kubectl kuota pending`` (the visibility API reaches the
  operator) and explained by ``kubectl kuota why``. The only word filled in is the
  doc's ``<its workload>``, from the pending list, as a reader would;
* kube-controller-manager runs its default controllers (an EndpointSlice is made
  for a Service, which the test tier's narrower set does not do);
* SIGINT stops it: exit status 0, no process of it left, nothing listening on its
  ports.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster.binaries import ROOT, find_binaries, helm_path, pinned_versions, require
from tests.cluster.kube import poll
from tests.markdown_blocks import blocks_under

SANDBOX = ROOT / "hack" / "sandbox" / "sandbox.py"
READY_WITHIN = 60.0
DOC = ROOT / "docs" / "operator.md"
QUICK_START = "Quick start: a local cluster with `make sandbox`"


def quick_start() -> tuple[list[str], list[str]]:
    """docs/operator.md's quick start: the exports the sandbox prints (as the doc shows
    them) and the command lines then typed."""
    start, exports, commands = blocks_under(DOC, QUICK_START, "sh")
    assert start.text.startswith("make sandbox"), start.text
    shown = [line.split("=", 1)[0] for line in exports.text.splitlines() if line.strip()]
    typed = [line for line in commands.text.splitlines() if shlex.split(line, comments=True)]
    return shown, typed


@pytest.fixture(autouse=True)
def _clean_cluster_objects() -> Iterator[None]:
    """Overrides the real tier's cleanup: no session control plane is used here."""
    yield


class Sandbox:
    """The sandbox process, its output file and what its ready file says."""

    def __init__(self, version: str, tmp_path: pathlib.Path) -> None:
        self.tmp_path = tmp_path
        self.ready_file = tmp_path / "ready.json"
        self.output = tmp_path / "sandbox.out"
        self.workdir = tmp_path / "sandbox"
        with self.output.open("wb") as out:
            self.popen = subprocess.Popen(
                [sys.executable, str(SANDBOX), "--version", version, "--no-build",
                 "--workdir", str(self.workdir), "--ready-file", str(self.ready_file)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT)
        self.started = time.monotonic()
        self.ready: dict[str, Any] = {}

    def text(self) -> str:
        return self.output.read_text(errors="replace")

    def wait_ready(self, timeout: float) -> dict[str, Any]:
        deadline = self.started + timeout
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise AssertionError(f"the sandbox exited with {self.popen.returncode}:\n"
                                     f"{self.text()}")
            if self.ready_file.exists() and self.ready_file.read_text():
                self.ready = json.loads(self.ready_file.read_text())
                return self.ready
            time.sleep(0.2)
        raise AssertionError(f"the sandbox was not ready after {timeout:.0f} s:\n{self.text()}")

    def env(self) -> dict[str, str]:
        """What the printed exports give a user's shell."""
        return dict(os.environ, KUBECONFIG=self.ready["kubeconfig"], HOME=str(self.tmp_path),
                    PATH=f"{self.ready['path']}:{os.environ.get('PATH', '/usr/bin:/bin')}")

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(list(argv), capture_output=True, text=True, env=self.env(),
                              cwd=ROOT, timeout=60)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} failed ({done.returncode}):\n"
                                 f"{done.stderr}{done.stdout}\n--- sandbox ---\n{self.text()}")
        return done

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(30)


@pytest.fixture(params=pinned_versions(), ids=lambda v: f"k8s-{v}")
def sandbox(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[Sandbox]:
    version = request.param
    require(f"Kubernetes {version}",
            None if find_binaries(version) is None else version,
            "`make cluster-bins` (hack/cluster/build-bins.sh)")
    require("helm", helm_path(), "`make helm-bin` (hack/helm/build-helm.sh)")
    running = Sandbox(version, tmp_path)
    try:
        yield running
    finally:
        running.stop()


def wait_for(what: str, check: Any, sandbox: Sandbox, timeout: float = 60) -> Any:
    return poll(check, what=what, timeout=timeout, interval=0.3,
                describe=lambda: f"--- sandbox ---\n{sandbox.text()}")


def kubectl_json(sandbox: Sandbox, *args: str) -> Any:
    return json.loads(sandbox.run("kubectl", *args, "-o", "json").stdout)


def started(sandbox: Sandbox, job: str) -> dict[str, Any] | None:
    found = kubectl_json(sandbox, "get", "job", job)
    return found if found["spec"].get("suspend") is False else None


def run_quick_start(sandbox: Sandbox, typed: list[str]) -> dict[str, str]:
    """Run the doc's commands in order, as written; their outputs by the first words
    (e.g. ``kubectl kuota pending``, ``kubectl create`` with every Job's output joined).

    A command the doc shows after the Jobs were created and before they settled (the
    listings, ``pending``) runs once the first Jobs have started, as a reader pasting the
    block a few seconds later would see them; ``pending`` is retried until the waiting
    Job is in it. ``<its workload>`` is that Job's Workload, from the pending list."""
    outputs: dict[str, str] = {}
    created: list[str] = []
    settled = False
    waiting = ""
    for line in typed:
        argv = shlex.split(line.replace("<its workload>", waiting), comments=True)
        key = " ".join(word for word in argv[:3] if not word.startswith("-"))
        if key != "kubectl create" and created and not settled:  # the Jobs settle first
            settled = True
            for job in created[:3] + created[-1:]:
                wait_for(f"Job {job} to be admitted and started",
                         lambda j=job: started(sandbox, j), sandbox)
        if key == "kubectl kuota pending":  # the fourth Job's Workload, once listed
            row = rf"^\d+\s+default\s+(\S*{re.escape(created[3])}\S*)"
            done = wait_for("the waiting Job in kubectl kuota pending", lambda a=argv, r=row: (
                out := sandbox.run(*a, check=False)) and re.search(r, out.stdout, re.M)
                and out, sandbox)
            waiting = re.findall(row, done.stdout, re.MULTILINE)[0]
        else:
            done = sandbox.run(*argv)
        if key == "kubectl create":
            created += re.findall(r"^job\.batch/(\S+) created$", done.stdout, re.MULTILINE)
        outputs[key] = outputs.get(key, "") + done.stdout
    assert waiting, "the quick start never listed the waiting Job"
    return outputs


def listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def processes_under(directory: pathlib.Path) -> list[str]:
    """Command lines of live processes that name ``directory`` (every part the sandbox
    starts has a file there in its arguments)."""
    found = []
    for cmdline in pathlib.Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(directory) in text and str(SANDBOX) not in text:
            found.append(text)
    return found


def test_the_sandbox_is_ready_within_a_minute_runs_the_quick_start_and_stops_on_ctrl_c(
        sandbox: Sandbox) -> None:
    ready = sandbox.wait_ready(timeout=180)
    assert f"export KUBECONFIG={ready['kubeconfig']}" in sandbox.text()
    assert "sandbox ready" in sandbox.text()
    sandbox.run("kubectl", "get", "cq")
    to_get_cq = time.monotonic() - sandbox.started
    print(f"\nsandbox: ready in {ready['seconds']} s (its own count), a working "
          f"`kubectl get cq` {to_get_cq:.1f} s after starting it")
    assert to_get_cq <= READY_WITHIN, f"kubectl get cq worked only after {to_get_cq:.1f} s"

    shown, typed = quick_start()
    for export in shown:  # what the doc says the sandbox prints, it prints
        assert re.search(rf"^\s*{re.escape(export)}=\S+", sandbox.text(), re.M), export
    outputs = run_quick_start(sandbox, typed)
    created = [m.group(1) for out in outputs.values()
               for m in re.finditer(r"^job\.batch/(\S+) created$", out, re.MULTILINE)]
    *cpu_jobs, gpu_job = created
    assert len(cpu_jobs) == 4, created
    gpu_template = kubectl_json(sandbox, "get", "job", gpu_job)["spec"]["template"]["spec"]
    assert gpu_template["nodeSelector"] == {"node-pool": "gpu-a100"}
    cpu_template = kubectl_json(sandbox, "get", "job", cpu_jobs[0])["spec"]["template"]["spec"]
    assert cpu_template["nodeSelector"] == {"node-pool": "cpu"}
    # The fourth CPU Job does not fit the cpu flavor's 9 CPUs (and may not take the GPU
    # nodes): it waits, suspended; the visibility API lists it, why explains it.
    assert kubectl_json(sandbox, "get", "job", cpu_jobs[3])["spec"]["suspend"] is True
    assert cpu_jobs[3] in outputs["kubectl kuota pending"]
    assert cpu_jobs[3] in outputs["kubectl kuota why"]
    columns = outputs["kubectl get job"]
    for job, suspended, pool in ((cpu_jobs[0], "false", "cpu"), (gpu_job, "false", "gpu-a100"),
                                 (cpu_jobs[3], "true", "<none>")):  # no flavor before admission
        assert re.search(rf"^{job}\s+{suspended}\s+{pool}\s*$", columns, re.MULTILINE), columns
    assert "cluster-queue" in outputs["kubectl get cq,lq,kwl"]
    assert "user-queue" in outputs["kubectl get cq,lq,kwl"]

    sandbox.run("kubectl", "create", "service", "clusterip", "sandbox-check", "--tcp=80:80")
    wait_for("an EndpointSlice for a Service (default controllers on)", lambda: kubectl_json(
        sandbox, "get", "endpointslices", "-l",
        "kubernetes.io/service-name=sandbox-check")["items"], sandbox)

    sandbox.popen.send_signal(signal.SIGINT)
    assert sandbox.popen.wait(90) == 0, sandbox.text()
    assert sandbox.text().rstrip().endswith("sandbox stopped; work directory kept: "
                                            f"{sandbox.workdir}")
    assert processes_under(sandbox.workdir) == []
    assert [name for name, port in ready["ports"].items() if listening(port)] == []
