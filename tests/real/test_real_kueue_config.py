"""``kuota operator --config`` with Kueue's own Configuration file, on a real control plane.

A v1beta1 Configuration naming ``integrations.frameworks: [batch/job]`` and
``manageJobsWithoutQueueName: false``: a queue-labelled Job is held by the
webhook, admitted and run on its flavor, while a queue-labelled Pod — queued
without the file (tests/real/test_real_pod_kinds.py) — is created ungated,
runs outside kuota and gets no Workload. A file with a field kuota cannot
honour (``manageJobsWithoutQueueName: true``) stops the command with exit
status 2 naming the file and the field, before it connects to anything.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
from typing import Any

import yaml

from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import Kube
from tests.real import builders as b
from tests.real.operator import Installation, OperatorProcess, _kuota_command
from tests.real.test_real_pod_kinds import gated, sample_pod

Body = dict[str, Any]


def configuration(directory: pathlib.Path, **fields: Any) -> pathlib.Path:
    path = directory / "kueue-config.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "config.kueue.x-k8s.io/v1beta1",
                                    "kind": "Configuration", **fields}))
    return path


def test_only_the_configured_frameworks_are_queued(
        control_plane: ControlPlane, kube: Kube, namespace: str, installation: Installation,
        tmp_path: pathlib.Path) -> None:
    pool = b.pool_queue(control_plane, kube, namespace, {"cpu": 4}, nodes=1, node_cpu="8")
    config = configuration(tmp_path, manageJobsWithoutQueueName=False,
                           integrations={"frameworks": ["batch/job"]})
    with OperatorProcess(installation, tmp_path, "--config", str(config)) as operator:
        try:
            job = kube.create(b.job("train", namespace, cpu="1", run_for="2s"))
            assert job["spec"]["suspend"] is True, "the webhook must hold the Job"
            pod = kube.create(sample_pod(namespace))
            assert not gated(pod), pod["spec"]
            name = pod["metadata"]["name"]

            def succeeded() -> Body | None:
                now = kube.get("v1", "Pod", name, namespace)
                return now if (now.get("status") or {}).get("phase") == "Succeeded" else None

            ran = kube.wait_for(succeeded, what="the unqueued pod to run as it is")
            assert "nodeSelector" not in ran["spec"]
            assert kube.wait_for(lambda: b.job_finished(
                kube.get("batch/v1", "Job", "train", namespace)),
                what="the Job admitted and complete") == "Complete"
            started = kube.get("batch/v1", "Job", "train", namespace)
            assert started["spec"]["template"]["spec"]["nodeSelector"] == {"pool": pool}
            owners = [r["kind"] for wl in kube.list(b.API, "Workload", namespace)
                      for r in wl["metadata"].get("ownerReferences") or []]
            assert owners == ["Job"]
        except AssertionError:
            print(f"--- kuota operator log ---\n{operator.tail(200)}")
            raise


def test_a_field_kuota_cannot_honour_stops_the_start(
        control_plane: ControlPlane, tmp_path: pathlib.Path) -> None:
    config = configuration(tmp_path, manageJobsWithoutQueueName=True)
    done = subprocess.run(
        [*_kuota_command(), "operator", "--config", str(config), "--lease", "none"],
        capture_output=True, text=True, timeout=60,
        env=dict(os.environ, KUBECONFIG=str(control_plane.admin_kubeconfig)))
    assert done.returncode == 2, done.stderr
    assert f"--config {config}: manageJobsWithoutQueueName: true is not supported" \
        in done.stderr
    assert "leading" not in done.stderr
