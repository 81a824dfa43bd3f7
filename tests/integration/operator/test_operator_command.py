"""``kuota operator`` as a process: kubeconfig login, probes, metrics, admits a Job."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import urllib.request

from tests.emulator import Emulator, write_kubeconfig
from tests.integration.operator import harness as h


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return answer.status, answer.read().decode()
    except OSError:
        return 0, ""


def test_the_command_runs_the_operator(cluster: Emulator, tmp_path: pathlib.Path) -> None:
    cluster.apply(h.flavor("default"), h.cluster_queue("team", quotas={"default": {"cpu": 4}}),
                  h.local_queue("main", "team"))
    config = write_kubeconfig(cluster.url, tmp_path / "kubeconfig")
    port = h.free_port()
    env = dict(os.environ, KUBECONFIG=str(config), HOME=str(tmp_path))
    process = subprocess.Popen(
        [sys.executable, "-m", "kuota.cli", "operator", "--lease", "kuota-system/op",
         "--probes", f"127.0.0.1:{port}", "--status-interval", "0.2"],
        cwd=h.ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        h.wait(cluster, lambda: fetch(f"http://127.0.0.1:{port}/readyz") == (200, "leading"),
               "the operator to lead", timeout=30)
        assert fetch(f"http://127.0.0.1:{port}/healthz")[0] == 200
        job = h.job("cli")
        job["spec"]["suspend"] = True  # no webhook in this run: created as the webhook would
        cluster.create(job)
        h.wait(cluster, lambda: h.running(cluster, "cli"), "the Job to start")
        h.wait(cluster, lambda: 'kueue_admitted_active_workloads{cluster_queue="team"} 1.0'
               in fetch(f"http://127.0.0.1:{port}/metrics")[1], "the metrics to count it")
        metrics = fetch(f"http://127.0.0.1:{port}/metrics")[1]
        assert 'kueue_admitted_workloads_total{cluster_queue="team"} 1.0' in metrics
        assert 'kueue_admission_wait_time_seconds_count{cluster_queue="team"} 1.0' in metrics
        assert "kueue_cluster_queue_nominal_quota" in metrics
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    lease = cluster.get("coordination.k8s.io/v1", "Lease", "op", "kuota-system")
    assert not lease["spec"].get("holderIdentity")  # released on the way out
