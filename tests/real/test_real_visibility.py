"""Pending positions through a real API server's aggregation layer (visibility.kuota.dev).

The shipped APIService sends ``/apis/visibility.kuota.dev/...`` to the operator; the API
server authenticates the user, vouches for them with its front-proxy client certificate,
and the operator authorizes each read with a SubjectAccessReview, so RBAC decides who sees
which queue. kubectl reads the positions with ``get --raw`` and with ``kubectl kuota``.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import Kube
from tests.real import builders as b
from tests.real.operator import Installation, OperatorProcess, Visibility
from tests.real.test_real_kubectl_plugin import kubectl_kuota

GROUP_PATH = "/apis/visibility.kuota.dev/v1beta2"


def raw(plane: ControlPlane, path: str, *as_user: str) -> tuple[int, Any]:
    done = plane.kubectl("get", "--raw", path, *as_user, check=False)
    if done.returncode == 0:
        return 200, json.loads(done.stdout)
    return done.returncode, done.stderr


def test_positions_are_read_through_the_api_server_as_rbac_allows(
        control_plane: ControlPlane, installation: Installation, kube: Kube, namespace: str,
        tmp_path: pathlib.Path) -> None:
    rf, cq = f"{namespace}-rf", f"{namespace}-cq"
    kube.apply(b.flavor(rf), b.cluster_queue(cq, quotas={rf: {"cpu": 1}}),
               b.local_queue("main", cq, namespace), b.local_queue("side", cq, namespace))
    with Visibility(installation) as visibility, \
            OperatorProcess(installation, tmp_path, *visibility.operator_args()):
        kube.create(b.job("first", namespace, run_for="600s"))
        kube.wait_for(lambda: (b.workload_of(kube.list(b.API, "Workload", namespace), "first")
                               or {}).get("status", {}).get("admission"),
                      what="the first Job admitted")
        for name, queue in (("w1", "main"), ("w2", "side"), ("w3", "main")):
            kube.create(b.job(name, namespace, queue=queue))
        cq_path = f"{GROUP_PATH}/clusterqueues/{cq}/pendingworkloads"

        def three_waiting() -> Any:
            code, body = raw(control_plane, cq_path)
            return body if code == 200 and len(body["items"]) == 3 else None

        summary = kube.wait_for(three_waiting, what="three pending workloads served",
                                timeout=90)
        assert summary["kind"] == "PendingWorkloadsSummary"
        rows = [(i["metadata"]["ownerReferences"][0]["name"], i["localQueueName"],
                 i["positionInClusterQueue"], i["positionInLocalQueue"])
                for i in summary["items"]]
        assert rows == [("w1", "main", 0, 0), ("w2", "side", 1, 0), ("w3", "main", 2, 1)]

        code, local = raw(control_plane, f"{GROUP_PATH}/namespaces/{namespace}/localqueues/"
                                         "main/pendingworkloads?offset=1")
        assert code == 200
        assert [i["positionInLocalQueue"] for i in local["items"]] == [1]

        # RBAC decides: a user with nothing granted is refused; `view` in the namespace
        # (which kuota-pending-localqueues is aggregated into) opens its LocalQueues only.
        reader = ("--as", "dana")
        code, err = raw(control_plane, cq_path, *reader)
        assert code != 0 and "forbidden" in err.lower(), err
        control_plane.kubectl("create", "rolebinding", "dana-view", "--clusterrole=view",
                              "--user=dana", "-n", namespace)
        lq_path = f"{GROUP_PATH}/namespaces/{namespace}/localqueues/side/pendingworkloads"
        seen: list[Any] = []

        def dana_reads() -> Any:
            seen.append(raw(control_plane, lq_path, *reader))
            return seen[-1] if seen[-1][0] == 200 else None

        try:
            code, body = kube.wait_for(dana_reads, timeout=30,
                                       what="dana reads the LocalQueue once `view` is bound")
        except AssertionError:
            can_i = control_plane.kubectl(
                "auth", "can-i", "get", "localqueues.visibility.kuota.dev/pendingworkloads",
                "-n", namespace, *reader, check=False)
            raise AssertionError(f"last answer {seen[-1]}; can-i: {can_i.stdout}") from None
        assert [i["localQueueName"] for i in body["items"]] == ["side"]
        code, err = raw(control_plane, cq_path, *reader)
        assert code != 0 and "forbidden" in err.lower(), err

        code, err = raw(control_plane, f"{GROUP_PATH}/clusterqueues/nope/pendingworkloads")
        assert code != 0 and "not found" in err.lower(), err

        table = kubectl_kuota(control_plane, "pending", "clusterqueue", cq)
        assert [line.split()[:4] for line in table.splitlines()[1:]] == [
            [str(i["positionInClusterQueue"]), namespace, i["metadata"]["name"],
             i["localQueueName"]] for i in summary["items"]]
        why = kubectl_kuota(control_plane, "why", summary["items"][2]["metadata"]["name"],
                            "-n", namespace)
        assert f"Position: 2 of {len(summary['items'])} in ClusterQueue {cq}, 1 in LocalQueue" \
            in why, why
