"""Topology and binpacking on a real cluster: the webhook gates, the real scheduler places.

* A Job asking for one rack: the shipped webhook configuration sends its pods
  to kuota's pod webhook (they carry ``kuota.dev/tas``), they are created
  gated, kuota ungates each with its domain's nodeSelector, and kube-scheduler
  binds them to that rack's kwok nodes.
* The shipped KubeSchedulerConfiguration's ``kuota-binpack`` profile calls
  ``kuota extender`` for GPU pods — over HTTPS with its client certificate, as
  the shipped ``tlsConfig`` says — and a gang packs onto the fullest node; a
  caller without that certificate is refused, the kubelet's probes are not.
"""

from __future__ import annotations

import http.client
import pathlib
import ssl
import time
import urllib.error
import urllib.request

import yaml

from tests.cluster.controlplane import ControlPlane, node
from tests.cluster.kube import Kube
from tests.real import builders as b
from tests.real.conftest import Extender
from tests.real.operator import OperatorProcess

RACK = "kuota.dev/test-rack"  # the extender fixture's first topology level
HOST = "kubernetes.io/hostname"


def _pods(kube: Kube, namespace: str, job: str) -> list[dict]:
    return kube.list("v1", "Pod", namespace, label_selector=f"job-name={job}")


def test_a_job_asking_for_a_rack_is_gated_pinned_and_lands_on_that_rack(
        control_plane: ControlPlane, kube: Kube, namespace: str,
        operator: OperatorProcess) -> None:
    pool = f"{namespace}-tas"
    gpus = {"nvidia.com/gpu": "2"}
    control_plane.add_nodes(
        node(f"{namespace}-r1a", labels={"pool": pool, RACK: "r1"}, extra=gpus),
        node(f"{namespace}-r1b", labels={"pool": pool, RACK: "r1"}, extra=gpus),
        node(f"{namespace}-r2a", labels={"pool": pool, RACK: "r2"}, extra={"nvidia.com/gpu": "8"}),
        node(f"{namespace}-r2b", labels={"pool": pool, RACK: "r2"}, extra={"nvidia.com/gpu": "8"}))
    topo, rf, cq = f"{namespace}-topo", f"{namespace}-rf", f"{namespace}-cq"
    kube.apply({"apiVersion": b.API, "kind": "Topology", "metadata": {"name": topo},
                "spec": {"levels": [{"nodeLabel": RACK}, {"nodeLabel": HOST}]}})
    flavor = b.flavor(rf, labels={"pool": pool})
    flavor["spec"]["topologyName"] = topo
    kube.apply(flavor, b.cluster_queue(cq, quotas={rf: {"cpu": 32, b.GPU: 32}}),
               b.local_queue("main", cq, namespace))

    # 4 pods of 1 GPU: rack r1 holds exactly 4, the tightest fit.
    kube.create(b.job("tas", namespace, cpu="1", gpu=1, parallelism=4, run_for="30s",
                      pod_annotations={"kuota.dev/podset-required-topology": RACK}))

    def bound() -> list[dict] | None:
        pods = _pods(kube, namespace, "tas")
        return pods if len(pods) == 4 and all(p["spec"].get("nodeName") for p in pods) else None

    pods = kube.wait_for(bound, what="the Job's 4 pods to be ungated and bound", timeout=60)
    for pod in pods:
        assert pod["metadata"]["labels"].get("kuota.dev/tas"), pod["metadata"]
        selector = pod["spec"]["nodeSelector"]
        assert selector[RACK] == "r1" and selector["pool"] == pool, selector
        assert pod["spec"]["nodeName"] == selector[HOST]
        assert not pod["spec"].get("schedulingGates")
    assert sorted(p["spec"]["nodeName"] for p in pods) == \
        sorted([f"{namespace}-r1a"] * 2 + [f"{namespace}-r1b"] * 2)
    # (an Event is posted in the background after its pod's ungating: it may come after the
    # pod is bound)
    names = {p["metadata"]["name"] for p in pods}

    def told() -> set[str] | None:
        ungated = kube.list("v1", "Event", namespace, field_selector="reason=TopologyUngated")
        seen = {e["involvedObject"]["name"] for e in ungated}
        return seen if seen == names else None

    kube.wait_for(told, what="a TopologyUngated Event for each pod", timeout=30)


def test_the_binpack_profile_calls_the_extender_and_packs_a_gang_onto_the_fullest_node(
        control_plane: ControlPlane, kube: Kube, namespace: str,
        operator: OperatorProcess, extender: Extender) -> None:
    # The running kube-scheduler's configuration is the shipped one, talking mutual TLS.
    config = yaml.safe_load((control_plane.workdir / "kube-scheduler.yaml").read_text())
    (entry,) = config["extenders"]
    assert (entry["urlPrefix"], entry["enableHTTPS"]) == (extender.url, True)
    assert entry["tlsConfig"] == extender.tls
    pool = f"{namespace}-gpu"
    control_plane.add_nodes(*(node(f"{namespace}-g{i}", labels={"pool": pool},
                                   extra={"nvidia.com/gpu": "4"}) for i in (1, 2, 3)))
    rf, cq = f"{namespace}-rf", f"{namespace}-cq"
    kube.apply(b.flavor(rf, labels={"pool": pool}),
               b.cluster_queue(cq, quotas={rf: {"cpu": 32, b.GPU: 12}}),
               b.local_queue("main", cq, namespace))
    log = control_plane.workdir / "logs" / "kuota-extender.log"
    calls_before = log.read_text().count("POST /prioritize")

    kube.create(b.job("filler", namespace, cpu="1", gpu=2, run_for="1h",
                      scheduler_name="kuota-binpack"))
    filler = kube.wait_for(lambda: [p for p in _pods(kube, namespace, "filler")
                                    if p["spec"].get("nodeName")],
                           what="the filler pod to be bound")[0]["spec"]["nodeName"]

    kube.create(b.job("gang", namespace, cpu="1", gpu=1, parallelism=2, run_for="1h",
                      scheduler_name="kuota-binpack"))
    pods = kube.wait_for(lambda: [p for p in _pods(kube, namespace, "gang")
                                  if p["spec"].get("nodeName")][1:] and
                         _pods(kube, namespace, "gang"), what="the gang to be bound")
    assert [p["spec"]["nodeName"] for p in pods] == [filler, filler], (filler, pods)
    time.sleep(0.5)  # the extender's access log is written after the answer
    assert log.read_text().count("POST /prioritize") > calls_before, \
        "kube-scheduler never asked kuota extender"


def _status(url: str, context: ssl.SSLContext | None = None) -> int | str:
    """The HTTP status of a GET, or the name of the error that stopped it."""
    try:
        with urllib.request.urlopen(url, context=context, timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except (OSError, http.client.HTTPException) as exc:  # URLError, SSLError, resets
        return type(getattr(exc, "reason", exc)).__name__


def test_the_extender_serves_kube_schedulers_certificate_only_and_probes_in_plain(
        extender: Extender) -> None:
    def context(client: tuple[pathlib.Path, pathlib.Path] | None) -> ssl.SSLContext:
        made = ssl.create_default_context(cafile=str(extender.ca))
        if client:
            made.load_cert_chain(*map(str, client))
        return made

    https = f"{extender.url}/readyz"
    assert _status(https, context(extender.client)) == 200
    refused = _status(https, context(None))
    assert refused != 200 and isinstance(refused, str), refused  # failed in the handshake
    assert _status(https.replace("https:", "http:")) != 200  # plain HTTP on the TLS port
    probes = f"http://127.0.0.1:{extender.probe_port}"
    assert (_status(f"{probes}/healthz"), _status(f"{probes}/readyz")) == (200, 200)
