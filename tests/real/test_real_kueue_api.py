"""kuota serving Kueue's own API group (``kuota operator --api kueue``) on a real cluster.

The CRDs are the shipped ``manifests/kueue`` ones (v1beta2 stored, v1beta1
converted by the operator's webhook), with only the conversion webhook's
clientConfig pointed at the host-run operator. What Kueue users have is used
unchanged: manifests in Kueue's API (both versions), Jobs labelled
``kueue.x-k8s.io/queue-name``, and Kueue's own ``kueuectl`` built from Kueue's
Go module (``hack/kueue/build.sh``).

Kueue's site/static/examples are not in Kueue's Go module (``site`` is a module
of its own, not on the proxy), so the manifests here are written in their
shape: one flavor, one ClusterQueue for every namespace, a LocalQueue, a Job.
"""

from __future__ import annotations

import base64
import json
import pathlib
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from tests.cluster.binaries import cache_dir, require
from tests.cluster.controlplane import ControlPlane, node
from tests.cluster.kube import poll
from tests.real import operator as op

ROOT = pathlib.Path(__file__).resolve().parents[2]
KUEUE_VERSION = "v0.15.0"
GROUP = "kueue.x-k8s.io"
KINDS = ("workloads", "localqueues", "clusterqueues", "resourceflavors", "cohorts",
         "workloadpriorityclasses", "admissionchecks", "topologies")


def kueue_crds(port: int, ca: pathlib.Path) -> list[dict[str, Any]]:
    """The shipped Kueue-group CRDs, their conversion webhook at https://127.0.0.1:PORT."""
    bundle = base64.b64encode(ca.read_bytes()).decode()
    docs = []
    for path in sorted((ROOT / "manifests" / "kueue").glob(f"*.{GROUP}.yaml")):
        doc = yaml.safe_load(path.read_text())
        doc["spec"]["conversion"]["webhook"]["clientConfig"] = {
            "url": f"https://127.0.0.1:{port}/convert", "caBundle": bundle}
        docs.append(doc)
    return docs


@pytest.fixture
def kueue_group(control_plane: ControlPlane, installation: op.Installation) -> Iterator[None]:
    docs = kueue_crds(installation.webhook_port, control_plane.ca.cert)
    control_plane.kubectl("apply", "--server-side", "-f", "-",
                          input=yaml.safe_dump_all(docs))
    names = [d["metadata"]["name"] for d in docs]
    control_plane.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                          *(f"crd/{n}" for n in names))
    yield
    # Gone with the test: kuota.dev's tests must not meet two groups answering `cq`.
    # (a CRD made seconds ago may take a while: its instances' cleanup waits for the new
    # watch cache, answering 429 meanwhile)
    control_plane.kubectl("delete", "crd", *names, "--wait=true", "--timeout=150s",
                          check=False, timeout=180)


@pytest.fixture
def kueue_operator(request: pytest.FixtureRequest, kueue_group: None,
                   installation: op.Installation, tmp_path: pathlib.Path,
                   control_plane: ControlPlane) -> Iterator[op.OperatorProcess]:
    """The operator serving Kueue's group, and Kueue's visibility API through the API
    server's aggregation layer."""
    with op.Visibility(installation, kueue=True) as visibility, \
            op.OperatorProcess(installation, tmp_path, "--api", "kueue",
                               *visibility.operator_args()) as process:
        yield process
    if any(getattr(getattr(request.node, f"report_{when}", None), "failed", False)
           for when in ("setup", "call")):
        print(f"--- kuota operator log ---\n{process.tail(200)}\n{control_plane.logs(20)}")


def kueuectl(plane: ControlPlane, *args: str) -> str:
    binary = cache_dir() / "kueue" / KUEUE_VERSION / "bin" / "kueuectl"
    program = require("kueuectl", str(binary) if binary.exists() else None,
                      "`bash hack/kueue/build.sh`")
    done = subprocess.run([program, "--kubeconfig", str(plane.admin_kubeconfig), *args],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, f"kueuectl {' '.join(args)}: {done.stderr}{done.stdout}"
    return done.stdout


def get(plane: ControlPlane, resource: str, name: str, namespace: str | None = None
        ) -> dict[str, Any]:
    where = ("-n", namespace) if namespace else ()
    return dict(json.loads(plane.kubectl("get", resource, name, *where, "-o", "json").stdout))


def wait_for(check: Any, what: str, timeout: float = 60) -> Any:
    return poll(check, what=what, timeout=timeout, interval=0.3)


def condition(obj: dict[str, Any], kind: str) -> str | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return str(cond.get("status"))
    return None


def workloads(plane: ControlPlane, namespace: str) -> list[dict[str, Any]]:
    listed = json.loads(plane.kubectl("get", f"workloads.v1beta2.{GROUP}", "-n", namespace,
                                      "-o", "json").stdout)
    return list(listed["items"])


def kueue_job(name: str, namespace: str, queue: str, *, cpu: str = "1",
              parallelism: int = 1) -> str:
    """A Job as Kueue's docs write one: only the queue label tells it to Kueue."""
    return f"""
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: {namespace}
  labels:
    kueue.x-k8s.io/queue-name: {queue}
spec:
  parallelism: {parallelism}
  completions: {parallelism}
  suspend: true
  template:
    spec:
      containers:
      - name: dummy-job
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        args: ["entrypoint-tester", "hello", "world"]
        resources:
          requests:
            cpu: "{cpu}"
            memory: "200Mi"
      restartPolicy: Never
"""


class TestKueueManifests:
    def test_a_kueue_setup_applies_unchanged_and_its_job_runs_to_the_end(
            self, control_plane: ControlPlane, namespace: str,
            kueue_operator: op.OperatorProcess) -> None:
        control_plane.add_nodes(node(f"{namespace}-n1", cpu="8"))
        rf, cq = f"default-flavor-{namespace}", f"cluster-queue-{namespace}"
        control_plane.kubectl("apply", "-f", "-", input=f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: {rf}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: {cq}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: {rf}
      resources:
      - name: "cpu"
        nominalQuota: 9
      - name: "memory"
        nominalQuota: 36Gi
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  namespace: {namespace}
  name: user-queue
spec:
  clusterQueue: {cq}
""")
        control_plane.kubectl("create", "-f", "-",
                              input=kueue_job("sample-job", namespace, "user-queue",
                                              parallelism=3))

        [wl] = wait_for(lambda: [w for w in workloads(control_plane, namespace)
                                 if condition(w, "Admitted") == "True"] or None,
                        "the Kueue-group Workload to be admitted")
        assert wl["apiVersion"] == f"{GROUP}/v1beta2"
        assert wl["spec"]["queueName"] == "user-queue"
        assert wl["status"]["admission"]["clusterQueue"] == cq
        assert wl["metadata"]["ownerReferences"][0]["name"] == "sample-job"
        wait_for(lambda: get(control_plane, "job", "sample-job", namespace)["spec"]["suspend"]
                 is False, "the Job to be started")
        usage = wait_for(lambda: get(control_plane, f"clusterqueues.{GROUP}", cq)
                         .get("status", {}).get("flavorsUsage"), "the queue's usage")
        assert usage[0]["name"] == rf

        wait_for(lambda: condition(get(control_plane, "job", "sample-job", namespace),
                                   "Complete") == "True", "the Job to complete", timeout=90)
        wait_for(lambda: condition(get(control_plane, f"workloads.{GROUP}",
                                       wl["metadata"]["name"], namespace), "Finished")
                 == "True", "the Workload to finish")
        # The LocalQueue read in v1beta1 has Kueue v1beta1's status names.
        lq = get(control_plane, f"localqueues.v1beta1.{GROUP}", "user-queue", namespace)
        assert lq["apiVersion"] == f"{GROUP}/v1beta1"
        assert "flavorsUsage" not in lq.get("status", {})

    def test_v1beta1_objects_are_converted_both_ways(
            self, control_plane: ControlPlane, namespace: str,
            kueue_operator: op.OperatorProcess) -> None:
        rf, cq = f"rf-{namespace}", f"cq-{namespace}"
        control_plane.kubectl("apply", "-f", "-", input=f"""
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: {rf}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: {cq}
spec:
  cohort: team-{namespace}
  namespaceSelector: {{}}
  flavorFungibility:
    whenCanBorrow: Borrow
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: {rf}
      resources:
      - name: "cpu"
        nominalQuota: 2
""")
        stored = get(control_plane, f"clusterqueues.v1beta2.{GROUP}", cq)
        assert stored["spec"]["cohortName"] == f"team-{namespace}"
        assert "cohort" not in stored["spec"]
        assert stored["spec"]["flavorFungibility"]["whenCanBorrow"] == "MayStopSearch"
        served = get(control_plane, f"clusterqueues.v1beta1.{GROUP}", cq)
        assert served["spec"]["cohort"] == f"team-{namespace}"
        # kuota reads the queue (written in v1beta1) and reports it active.
        wait_for(lambda: condition(get(control_plane, f"clusterqueues.{GROUP}", cq),
                                   "Active") == "True", "the queue to be active")


class TestKueuectl:
    def test_kueuectl_creates_lists_stops_and_resumes_against_kuota(
            self, control_plane: ControlPlane, namespace: str,
            kueue_operator: op.OperatorProcess) -> None:
        control_plane.add_nodes(node(f"{namespace}-n1", cpu="8"))
        rf, cq, lq = f"rf-{namespace}", f"cq-{namespace}", "lq"
        kueuectl(control_plane, "create", "resourceflavor", rf)
        kueuectl(control_plane, "create", "clusterqueue", cq, "--nominal-quota",
                 f"{rf}:cpu=2;memory=4Gi",
                 "--namespace-selector", f"kubernetes.io/metadata.name={namespace}")
        kueuectl(control_plane, "create", "localqueue", lq, "-n", namespace, "-c", cq)
        wait_for(lambda: cq in kueuectl(control_plane, "list", "clusterqueue"),
                 "kueuectl to list the ClusterQueue")
        assert lq in kueuectl(control_plane, "list", "localqueue", "-n", namespace)

        for name in ("first", "second"):  # room for one at a time
            control_plane.kubectl("create", "-f", "-",
                                  input=kueue_job(name, namespace, lq, cpu="2"))
            time.sleep(0.5)  # creation order decides who goes first

        def rows() -> dict[str, str]:
            out = kueuectl(control_plane, "list", "workload", "-n", namespace)
            return {line.split()[0]: line for line in out.splitlines()[1:] if line.strip()}

        def statuses() -> list[str] | None:
            listed = rows()
            marks = sorted("ADMITTED" if "ADMITTED" in row else
                           "PENDING" if "PENDING" in row else "?" for row in listed.values())
            return marks if marks == ["ADMITTED", "PENDING"] else None

        wait_for(statuses, "kueuectl to list one admitted and one pending workload")
        # The pending one's position comes from Kueue's visibility API, served by kuota.
        [pending] = [row for row in rows().values() if "PENDING" in row]
        header = kueuectl(control_plane, "list", "workload", "-n", namespace).splitlines()[0]
        at = header.index("POSITION IN QUEUE")
        assert pending[at:].split()[0] == "0", f"{header}\n{pending}"

        kueuectl(control_plane, "stop", "clusterqueue", cq)
        assert get(control_plane, f"clusterqueues.{GROUP}", cq)["spec"]["stopPolicy"] == \
            "HoldAndDrain"
        wait_for(lambda: get(control_plane, "job", "first", namespace)["spec"]["suspend"]
                 is True, "the stopped queue's running Job to be suspended")
        kueuectl(control_plane, "resume", "clusterqueue", cq)
        assert get(control_plane, f"clusterqueues.{GROUP}", cq)["spec"].get(
            "stopPolicy", "None") == "None"
        wait_for(lambda: any(get(control_plane, "job", n, namespace)["spec"]["suspend"]
                             is False for n in ("first", "second")),
                 "a Job to run again after resume")

        kueuectl(control_plane, "stop", "localqueue", lq, "-n", namespace)
        assert get(control_plane, f"localqueues.{GROUP}", lq, namespace)["spec"][
            "stopPolicy"] == "HoldAndDrain"
        kueuectl(control_plane, "resume", "localqueue", lq, "-n", namespace)


class TestBesideKueue:
    def test_it_refuses_to_serve_kueues_group_where_kueue_runs(
            self, control_plane: ControlPlane, namespace: str, kueue_group: None,
            installation: op.Installation, tmp_path: pathlib.Path) -> None:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        control_plane.kubectl("apply", "-f", "-", input=yaml.safe_dump({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "c1f6bfd2.kueue.x-k8s.io", "namespace": namespace},
            "spec": {"holderIdentity": "kueue-controller-manager-0_abc",
                     "leaseDurationSeconds": 15, "renewTime": now, "acquireTime": now}}))
        process = op.OperatorProcess(installation, tmp_path, "--api", "kueue")
        with pytest.raises(AssertionError, match="exited with"):
            process.start()
        process.stop(kill=True)
        log = process.tail(80)
        assert f"Kueue's controller holds Lease {namespace}/c1f6bfd2.kueue.x-k8s.io" in log
        assert "run kuota with --api kuota" in log


def test_kueue_build_is_pinned() -> None:
    """The version here is the one hack/kueue/build.sh builds by default."""
    script = (ROOT / "hack" / "kueue" / "build.sh").read_text()
    assert f'KUEUE_VERSION:-{KUEUE_VERSION}' in script
