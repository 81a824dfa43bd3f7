"""``kubectl kuota``: the real kubectl finds the plugin on PATH and it lists, stops and
resumes kuota's objects on a real API server (no operator needed: it reads and patches)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tempfile

from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import Kube
from tests.real import builders as b

PLUGIN = pathlib.Path(sys.executable).parent / "kubectl-kuota"


def kubectl_kuota(control_plane: ControlPlane, *args: str) -> str:
    """``kubectl kuota ARGS`` with only the plugin's directory and the system on PATH."""
    assert PLUGIN.exists(), f"{PLUGIN} is missing: `make setup` installs the console script"
    with tempfile.TemporaryDirectory() as bindir:
        os.symlink(PLUGIN, pathlib.Path(bindir) / "kubectl-kuota")
        env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": bindir,
               "KUBECONFIG": str(control_plane.admin_kubeconfig)}
        done = subprocess.run([control_plane.binaries.path("kubectl"), "kuota", *args],
                              env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_kubectl_finds_the_plugin_and_lists_stops_and_resumes_queues(
        control_plane: ControlPlane, kube: Kube, namespace: str) -> None:
    rf, cq = f"{namespace}-rf", f"{namespace}-cq"
    kube.apply(b.flavor(rf), b.cluster_queue(cq, quotas={rf: {"cpu": 4}}, cohort="pool"),
               b.local_queue("main", cq, namespace))
    listed = kubectl_kuota(control_plane, "list", "clusterqueues")
    assert any(line.split()[:2] == [cq, "pool"] for line in listed.splitlines()), listed
    listed = kubectl_kuota(control_plane, "list", "lq", "-n", namespace)
    assert [line.split()[:3] for line in listed.splitlines()[1:]] == [[namespace, "main", cq]]

    assert "stopped" in kubectl_kuota(control_plane, "stop", "cq", cq)
    assert kube.get(b.API, "ClusterQueue", cq)["spec"]["stopPolicy"] == "HoldAndDrain"
    kubectl_kuota(control_plane, "stop", "localqueue", "main", "-n", namespace,
                  "--keep-already-running")
    assert kube.get(b.API, "LocalQueue", "main", namespace)["spec"]["stopPolicy"] == "Hold"
    kubectl_kuota(control_plane, "resume", "cq", cq)
    assert kube.get(b.API, "ClusterQueue", cq)["spec"]["stopPolicy"] == "None"


def test_the_plugin_creates_queues_the_api_server_accepts(
        control_plane: ControlPlane, kube: Kube, namespace: str) -> None:
    cq = f"{namespace}-made"
    out = kubectl_kuota(control_plane, "create", "clusterqueue", cq, "--cohort", "org",
                        "--nominal-quota", "on:cpu=8,memory=32Gi;spot:cpu=4,memory=16Gi",
                        "--borrowing-limit", "on:cpu=2")
    assert f"clusterqueue {cq} created" in out
    spec = kube.get(b.API, "ClusterQueue", cq)["spec"]
    assert spec["cohortName"] == "org"
    assert [f["name"] for f in spec["resourceGroups"][0]["flavors"]] == ["on", "spot"]
    assert spec["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] == "2"
    out = kubectl_kuota(control_plane, "create", "localqueue", "main", "-n", namespace,
                        "-c", cq)
    assert kube.get(b.API, "LocalQueue", "main", namespace)["spec"]["clusterQueue"] == cq
    refused = subprocess.run(
        [control_plane.binaries.path("kubectl"), "kuota", "create", "localqueue", "other",
         "-n", namespace, "-c", "no-such-cq"],
        env={"PATH": f"{PLUGIN.parent}:/usr/bin:/bin", "HOME": str(control_plane.workdir),
             "KUBECONFIG": str(control_plane.admin_kubeconfig)},
        capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1
    assert "--clusterqueue no-such-cq: no such ClusterQueue" in refused.stderr
