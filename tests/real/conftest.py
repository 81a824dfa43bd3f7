"""Fixtures of the real tier: one control plane per pinned Kubernetes version.

Every test here is marked ``cluster`` and runs once per version in
``hack/cluster/versions.sh`` whose binaries are built (``make cluster-bins``).
Without them the tests are skipped, unless ``KUOTA_REQUIRE_CLUSTER=1`` (CI),
where a missing binary is a failure. All tests of one version share its
control plane and run on one xdist worker (``xdist_group``), one at a time;
each gets its own namespace and its own ``kuota operator``.

On a failure the control plane's and the operator's logs are printed and,
with ``KUOTA_TEST_ARTIFACTS=DIR``, copied there.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster import pki
from tests.cluster.binaries import find_binaries, pinned_versions
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import Kube
from tests.cluster.orphans import detached_child
from tests.cluster.peer_releases import peer_controller_fixture
from tests.ports import free_port
from tests.real import operator as op

VERSIONS = pinned_versions()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = pathlib.Path(__file__).parent
    for item in items:
        if here in pathlib.Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.cluster)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


class Extender:
    """``kuota extender`` for the shipped scheduler configuration (nodeCacheCapable), as the
    shipped Deployment runs it: HTTPS only for clients with a certificate of its own CA
    (kube-scheduler's, ``tls``), and its probes on a plain port of their own."""

    def __init__(self, port: int, workdir: pathlib.Path) -> None:
        self.port, self.probe_port = port, free_port()
        self.url = f"https://127.0.0.1:{port}"
        self.log = workdir / "logs" / "kuota-extender.log"
        self.popen: subprocess.Popen[bytes] | None = None
        ca = pki.Authority(workdir / "extender-pki")
        self.ca = ca.cert
        self.serving = ca.serving("kuota-extender", hosts=("127.0.0.1",))
        self.client = ca.client("kube-scheduler")
        #: kube-scheduler's tlsConfig: its client certificate and the CA to verify us by.
        self.tls = {"certFile": str(self.client[0]), "keyFile": str(self.client[1]),
                    "caFile": str(self.ca)}

    def start(self, kubeconfig: pathlib.Path) -> None:
        script = pathlib.Path(sys.executable).parent / "kuota"
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(
                [str(script), "extender", "--listen", f"127.0.0.1:{self.port}", "--node-cache",
                 "--tls-cert", str(self.serving[0]), "--tls-key", str(self.serving[1]),
                 "--client-ca", str(self.ca), "--probe-listen", f"127.0.0.1:{self.probe_port}",
                 "--kubeconfig", str(kubeconfig),
                 "--topology-levels", "kuota.dev/test-rack,kubernetes.io/hostname"],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                preexec_fn=detached_child())

    def stop(self) -> None:
        if self.popen and self.popen.poll() is None:
            self.popen.terminate()
            self.popen.wait(10)


@pytest.fixture(scope="session", params=[
    pytest.param(v, id=f"k8s-{v}", marks=pytest.mark.xdist_group(f"k8s-{v}")) for v in VERSIONS])
def control_plane(request: pytest.FixtureRequest,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    version = request.param
    binaries = find_binaries(version)
    if binaries is None:
        message = (f"Kubernetes {version} binaries are not built: run `make cluster-bins` "
                   f"(hack/cluster/build-bins.sh)")
        if os.environ.get("KUOTA_REQUIRE_CLUSTER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    workdir = tmp_path_factory.mktemp(f"k8s-{version}")
    extender = Extender(free_port(), workdir)
    plane = ControlPlane(binaries, workdir, extender_url=extender.url, extender_tls=extender.tls)
    with plane:
        extender.start(plane.admin_kubeconfig)
        plane.extender = extender  # type: ignore[attr-defined]
        plane.installation = op.install(plane)  # type: ignore[attr-defined]
        try:
            yield plane
        finally:
            extender.stop()
            op.keep_logs(workdir / "logs", f"k8s-{version}")


#: Peer controllers (other projects' real controllers, hack/controllers), one per control
#: plane, started by the first test that asks for one.
jobset_controller = peer_controller_fixture("jobset")
training_operator_controller = peer_controller_fixture("training-operator")
kuberay_controller = peer_controller_fixture("kuberay")
lws_controller = peer_controller_fixture("lws")
trainer_controller = peer_controller_fixture("trainer")
#: (The MPI operator binds a fixed port, so it runs per module: tests/real/
#: test_real_peer_mpi_operator.py.)


@pytest.fixture
def extender(control_plane: ControlPlane) -> Extender:
    return control_plane.extender  # type: ignore[attr-defined,no-any-return]


@pytest.fixture
def installation(control_plane: ControlPlane) -> op.Installation:
    return control_plane.installation  # type: ignore[attr-defined,no-any-return]


@pytest.fixture
def kube(control_plane: ControlPlane) -> Iterator[Kube]:
    client = Kube(control_plane.admin_kubeconfig, describe=control_plane.logs)
    yield client
    client.close()


@pytest.fixture
def namespace(request: pytest.FixtureRequest, control_plane: ControlPlane) -> Iterator[str]:
    """A fresh namespace for the test, deleted (without waiting) afterwards."""
    base = re.sub(r"[^a-z0-9]+", "-", request.node.originalname.lower()).strip("-")
    name = f"{base[:40]}-{os.urandom(2).hex()}"
    control_plane.kubectl("create", "namespace", name)
    control_plane.wait_namespace_ready(name)
    yield name
    control_plane.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def operator(request: pytest.FixtureRequest, installation: op.Installation,
             tmp_path: pathlib.Path, control_plane: ControlPlane
             ) -> Iterator[op.OperatorProcess]:
    """``kuota operator`` running as its ServiceAccount for the length of the test."""
    process = op.OperatorProcess(installation, tmp_path)
    with process:
        yield process
    failed = any(getattr(getattr(request.node, f"report_{when}", None), "failed", False)
                 for when in ("setup", "call"))
    if failed:
        print(f"--- kuota operator log ---\n{process.tail(200)}\n{control_plane.logs(20)}")
        op.keep_logs(tmp_path, f"{control_plane.binaries.version}-{request.node.name}")


@pytest.fixture(autouse=True)
def _clean_cluster_objects(control_plane: ControlPlane) -> Iterator[None]:
    """Cluster-scoped kuota objects do not outlive the test that made them."""
    yield
    control_plane.kubectl(
        "delete", "clusterqueues.kuota.dev,cohorts.kuota.dev,resourceflavors.kuota.dev,"
        "workloadpriorityclasses.kuota.dev,admissionchecks.kuota.dev,topologies.kuota.dev,"
        "memberclusters.kuota.dev,multiclusterconfigs.kuota.dev",
        "--all", "--wait=false", check=False)
