"""``kuota operator`` as a process: kubeconfig login, probes, metrics, admits a Job; out of
cluster, logging in with ``--kubeconfig``/``--context`` and serving ``--webhook-secret``."""

from __future__ import annotations

import base64
import os
import pathlib
import re
import signal
import ssl
import subprocess
import sys
import urllib.request

import yaml

from tests import webhook_certs as certs
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


def _two_contexts(url: str, path: pathlib.Path) -> pathlib.Path:
    """A kubeconfig whose current context points nowhere and whose ``emulator`` context
    is the emulator with a token of its own."""
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "elsewhere",
        "clusters": [{"name": "dead", "cluster": {"server": "http://127.0.0.1:9"}},
                     {"name": "emulator", "cluster": {"server": url}}],
        "users": [{"name": "nobody", "user": {"token": "wrong-token"}},
                  {"name": "operator", "user": {"token": "operator-token"}}],
        "contexts": [{"name": "elsewhere", "context": {"cluster": "dead", "user": "nobody"}},
                     {"name": "emulator", "context": {"cluster": "emulator",
                                                      "user": "operator"}}]}))
    return path


def test_out_of_cluster_the_operator_logs_in_from_the_flags_and_serves_the_secrets_certificate(
        cluster: Emulator, tmp_path: pathlib.Path) -> None:
    """``--kubeconfig``/``--context`` win over ``$KUBECONFIG`` and the current context, and
    ``--webhook-secret`` serves the certificate the Secret holds (no file copied by hand)."""
    leaf = certs.make_leaf(tmp_path, "from-secret")
    cluster.create({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                    "metadata": {"name": "kuota-webhook-tls", "namespace": "kuota-system"},
                    "data": {k: base64.b64encode(v).decode() for k, v in leaf.items()}})
    config = _two_contexts(cluster.url, tmp_path / "kubeconfig")
    probes, webhook = h.free_port(), h.free_port()
    env = dict(os.environ, KUBECONFIG=str(tmp_path / "not-this-one"), HOME=str(tmp_path))
    process = subprocess.Popen(
        [sys.executable, "-m", "kuota.cli", "operator", "--kubeconfig", str(config),
         "--context", "emulator", "--lease", "none", "--probes", f"127.0.0.1:{probes}",
         "--webhook-listen", f"127.0.0.1:{webhook}",
         "--webhook-secret", "kuota-system/kuota-webhook-tls"],
        cwd=h.ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        h.wait(cluster, lambda: fetch(f"http://127.0.0.1:{probes}/readyz")[0] == 200,
               "the operator to be ready", timeout=30)
        served = certs.served_certificate(webhook)
        assert served == ssl.PEM_cert_to_DER_cert(leaf["tls.crt"].decode())
        tokens = {r.headers.get("Authorization") for r in cluster.handler["get"]}
        assert tokens == {"Bearer operator-token"}
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    assert "written to" in output
    mirrored = re.search(r"written to (\S+)", output)
    assert mirrored and not pathlib.Path(mirrored.group(1)).exists(), "removed at exit"


def test_a_missing_secret_fails_the_start_naming_it(cluster: Emulator,
                                                     tmp_path: pathlib.Path) -> None:
    config = write_kubeconfig(cluster.url, tmp_path / "kubeconfig")
    done = subprocess.run(
        [sys.executable, "-m", "kuota.cli", "operator", "--kubeconfig", str(config),
         "--webhook-listen", f"127.0.0.1:{h.free_port()}",
         "--webhook-secret", "kuota-system/absent"],
        cwd=h.ROOT, capture_output=True, text=True, timeout=60,
        env=dict(os.environ, HOME=str(tmp_path)))
    assert done.returncode == 1
    assert "--webhook-secret: Secret kuota-system/absent: 404" in done.stderr
