"""Run kuota's operator in-process against the Kubernetes API emulator.

:class:`Running` starts the real operator (kopf handlers, webhook server,
cycle loop, writer) in a ``KopfRunner`` thread, pointed at an emulator
through ``@kopf.on.login``. The webhook is served over HTTPS with a
certificate made by ``openssl`` for 127.0.0.1, and kopf keeps the webhook
configuration ``kuota.dev`` up to date, so the emulator sends real
AdmissionReviews to it on every Job create.

Builders make the objects the tests need: flavors, queues and Jobs.
"""

from __future__ import annotations

import pathlib
import socket
import subprocess
import time
from collections.abc import Callable
from typing import Any

import kopf
import yaml
from kopf.testing import KopfRunner

from kuota.operator import names
from kuota.operator.handlers import WebhookOptions, build_registry
from kuota.operator.loop import Operator
from kuota.operator.settings import Options
from tests.emulator import Emulator
from tests.emulator.samples import finished_job_status

ROOT = pathlib.Path(__file__).resolve().parents[3]
API = "kuota.dev/v1alpha1"
Body = dict[str, Any]


def certificate(directory: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """A self-signed certificate for 127.0.0.1 (made once per directory)."""
    cert, key = directory / "tls.crt", directory / "tls.key"
    if not cert.exists():
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", str(key), "-out", str(cert)],
                       check=True, capture_output=True)
    return cert, key


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def install_crds(api: Emulator) -> None:
    for path in sorted((ROOT / "manifests" / "crds").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                api.create(doc)


def namespace(api: Emulator, name: str, **labels: str) -> None:
    if api.find("v1", "Namespace", name) is None:
        api.create({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": name, "labels": labels}})


def _watched_pod(meta: Body) -> bool:
    """Whether the operator watches this pod (names.INFORMED: by its labels)."""
    labels = meta.get("labels") or {}
    return any(label in labels for res, label in names.INFORMED
               if res.kind == "Pod" and label is not None)


class Running:
    """The operator running against ``api`` until the context exits."""

    def __init__(self, api: Emulator, certs: pathlib.Path, *, lease: str | None = None,
                 identity: str = "", webhook: dict[str, Any] | None = None,
                 server: str | None = None, **options: Any) -> None:
        """``webhook``: overrides of the :class:`WebhookOptions`; ``server``: where the
        operator reaches the API (default ``api.url``; e.g. a fault proxy in front of it);
        ``options``: overrides of the operator's :class:`Options`."""
        self.api = api
        cert, key = certificate(certs)
        defaults: dict[str, Any] = {"status_interval": 0.2, "lease_name": lease,
                                    "lease_namespace": "kuota-system", "identity": identity,
                                    "lease_duration": 3.0, "lease_renew": 0.5}
        defaults.update(options)
        self.operator = Operator(Options(**defaults))
        self.webhook_port = free_port()
        self.registry = build_registry(
            self.operator, kopf.ConnectionInfo(server=server or api.url),
            webhook=WebhookOptions(**{"addr": "127.0.0.1", "port": self.webhook_port,
                                      "certfile": str(cert), "pkeyfile": str(key),
                                      "host": "127.0.0.1", "managed": "kuota.dev",
                                      **(webhook or {})}))
        self.runner = KopfRunner(["run", "-A", "--standalone"], registry=self.registry,
                                 timeout=60)

    def __enter__(self) -> Running:
        self.runner.__enter__()
        self.api.wait_for(self.operator.ready.is_set, timeout=20, what="the operator leading")
        self.api.wait_for(self._webhook_configured, timeout=20, what="the webhook configuration")
        # The Job webhook fails closed: a Job posted before kopf's server listens is refused.
        self.api.wait_for(self._webhook_listens, timeout=20, what="the webhook to listen")
        return self

    def __exit__(self, *exc: Any) -> None:
        self.runner.__exit__(*exc)

    #: What the operator must have seen as the API server holds it before it is quiet.
    SEEN = (("batch/v1", "Job"), (API, "Workload"), ("v1", "Pod"))

    def quiet(self, timeout: float = 15, polls: int = 3) -> None:
        """Wait until the operator has done what it was going to do: it has seen every Job,
        Workload and Pod as the API server holds them, no cycle is due or running, no write
        is in flight — ``polls`` times in a row, 20 ms apart. Then a check that something
        did *not* happen means it (a fixed sleep would pass on a slow machine before the
        operator even looked)."""
        in_a_row = 0
        deadline = time.monotonic() + timeout
        while in_a_row < polls:
            if time.monotonic() > deadline:
                raise AssertionError(f"the operator was not quiet within {timeout} s:\n"
                                     f"{self.output[-3000:]}")
            in_a_row = in_a_row + 1 if self.operator.settled and self._seen_all() else 0
            time.sleep(0.02)

    def _seen_all(self) -> bool:
        objects = self.operator.controller.objects
        for api_version, kind in self.SEEN:
            for obj in self.api.list(api_version, kind):
                meta = obj["metadata"]
                if kind == "Pod" and not _watched_pod(meta):
                    continue
                key = f"{meta.get('namespace')}/{meta['name']}"
                seen = objects.get(kind, key)
                if seen is None or seen["metadata"].get("resourceVersion") != \
                        meta.get("resourceVersion"):
                    return False
        return True

    def _webhook_listens(self) -> bool:
        try:
            socket.create_connection(("127.0.0.1", self.webhook_port), timeout=1).close()
        except OSError:
            return False
        return True

    def _webhook_configured(self) -> bool:
        found = self.api.find("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration",
                              "kuota.dev")
        return bool(found and found.get("webhooks"))

    @property
    def output(self) -> str:
        return str(self.runner.output)


# -- builders ---------------------------------------------------------------------------------

def flavor(name: str, *, labels: dict[str, str] | None = None,
           tolerations: list[Body] | None = None, taints: list[Body] | None = None) -> Body:
    spec: Body = {"nodeLabels": labels or {}}
    if tolerations:
        spec["tolerations"] = tolerations
    if taints:
        spec["nodeTaints"] = taints
    return {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": name},
            "spec": spec}


def cluster_queue(name: str, *, quotas: dict[str, dict[str, Any]], cohort: str | None = None,
                  preemption: Body | None = None, **resource_limits: Any) -> Body:
    """``quotas``: flavor -> {resource: nominal | (nominal, borrowingLimit)}."""
    resources = sorted({r for q in quotas.values() for r in q})
    flavors = []
    for flavor_name, cells in quotas.items():
        entries = []
        for resource in resources:
            value = cells.get(resource, 0)
            nominal, borrowing = value if isinstance(value, tuple) else (value, None)
            entry: Body = {"name": resource, "nominalQuota": str(nominal)}
            if borrowing is not None:
                entry["borrowingLimit"] = str(borrowing)
            entries.append(entry)
        flavors.append({"name": flavor_name, "resources": entries})
    spec: Body = {"namespaceSelector": {},
                  "resourceGroups": [{"coveredResources": resources, "flavors": flavors}]}
    if cohort:
        spec["cohortName"] = cohort
    if preemption:
        spec["preemption"] = preemption
    spec.update(resource_limits)
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def local_queue(name: str, cq: str, namespace: str = "default") -> Body:
    return {"apiVersion": API, "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": namespace}, "spec": {"clusterQueue": cq}}


def priority_class(name: str, value: int) -> Body:
    return {"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": name},
            "value": value}


def job(name: str, *, queue: str | None = "main", cpu: str = "1", parallelism: int = 1,
        completions: int | None = None, namespace: str = "default",
        priority_class: str | None = None, node_selector: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None, kueue_label: bool = False) -> Body:
    labels: dict[str, str] = {}
    if queue is not None:
        labels["kueue.x-k8s.io/queue-name" if kueue_label else "kuota.dev/queue-name"] = queue
    if priority_class:
        labels["kuota.dev/priority-class"] = priority_class
    pod: Body = {"restartPolicy": "Never",
                 "containers": [{"name": "main", "image": "busybox",
                                 "resources": {"requests": {"cpu": cpu}}}]}
    if node_selector:
        pod["nodeSelector"] = node_selector
    spec: Body = {"parallelism": parallelism, "template": {"spec": pod}}
    if completions is not None:
        spec["completions"] = completions
    meta: Body = {"name": name, "namespace": namespace, "labels": labels}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec}


# -- reading state ----------------------------------------------------------------------------

def condition(obj: Body | None, type_: str) -> Body | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return dict(c)
    return None


def is_true(obj: Body | None, type_: str) -> bool:
    found = condition(obj, type_)
    return found is not None and found.get("status") == "True"


def workload_of(api: Emulator, job_name: str, namespace: str = "default") -> Body | None:
    for wl in api.list(API, "Workload", namespace):
        refs = wl["metadata"].get("ownerReferences") or []
        if any(r.get("kind") == "Job" and r.get("name") == job_name for r in refs):
            return wl
    return None


def get_job(api: Emulator, name: str, namespace: str = "default") -> Body:
    return api.get("batch/v1", "Job", name, namespace)


def running(api: Emulator, name: str, namespace: str = "default") -> bool:
    return get_job(api, name, namespace)["spec"].get("suspend") is False


def complete(api: Emulator, name: str, namespace: str = "default") -> None:
    """Play the Job controller: the Job succeeded."""
    api.patch("batch/v1", "Job", name, {"status": finished_job_status()},
              namespace=namespace, subresource="status")


def wait(api: Emulator, predicate: Callable[[], Any], what: str, timeout: float = 15) -> Any:
    return api.wait_for(predicate, timeout=timeout, what=what)


def settle(seconds: float = 0.5) -> None:
    """Give the operator time to do something it must not do (for negative checks)."""
    time.sleep(seconds)
