"""A Kubernetes member cluster through the ``kubernetes`` client (blocking; run it in tasks).

Connection: a kubeconfig document (from a Secret's ``data.kubeconfig`` or a
file, read by the operator) becomes an ``ApiClient``; clients are cached per
kubeconfig, so the worker thread keeps its connections alive between tasks.

Every call has a short timeout (:data:`TIMEOUT`): a member that does not
answer fails the task quickly, and the task's retries and the member's health
take it from there. Usage on the member's nodes is summed from the bound,
non-terminal pods that this manager did not send (those are counted by the
dispatcher already), with :func:`placement.objects.pod_requests`. The pods
this manager did send are summed per copy instead (:attr:`Copy.usage`; a pod
belongs to the Job its ``ownerReference`` names, or failing that its
``job-name`` label), so a manager that did not place them itself (it
restarted) can count them.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any, Final

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from kuota.federation.member import Body, Copy, Observation, add_pod, refused
from kuota.federation.remote_job import ORIGIN_LABEL, workload_of
from kuota.operator import names
from placement.model import Node
from placement.objects import ObjectError, node_from_object, pod_requests

#: (connect, read) seconds for each request to a member.
TIMEOUT: Final = (3.0, 10.0)
_TERMINAL: Final = ("Succeeded", "Failed")
#: Answers to a create that retrying the same request cannot change: bad request, forbidden
#: (an admission webhook, a ResourceQuota, RBAC), invalid on that cluster.
REFUSALS: Final = frozenset({400, 403, 422})

_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


def api_client(kubeconfig: Body) -> Any:
    """A cached ``ApiClient`` for one kubeconfig document."""
    digest = hashlib.sha256(json.dumps(kubeconfig, sort_keys=True).encode()).hexdigest()
    with _clients_lock:
        found = _clients.get(digest)
        if found is None:
            configuration = k8s.Configuration()
            k8s_config.load_kube_config_from_dict(  # type: ignore[no-untyped-call]
                kubeconfig, client_configuration=configuration)
            # No silent retries inside a task: a refused connection fails it at once, and the
            # task's own retries (or the next observation) decide what happens next.
            configuration.retries = False
            found = _clients[digest] = k8s.ApiClient(configuration)
        return found


class KubernetesMember:
    """The :class:`~kuota.federation.member.MemberAdapter` of one Kubernetes member."""

    def __init__(self, kubeconfig: Body) -> None:
        self._api = api_client(kubeconfig)
        self.core = k8s.CoreV1Api(self._api)
        self.batch = k8s.BatchV1Api(self._api)

    def _plain(self, obj: Any) -> Body:
        result: Body = self._api.sanitize_for_serialization(obj)
        return result

    def observe(self, origin: str) -> Observation:
        problems: list[str] = []
        nodes: dict[str, Node] = {}
        for raw in self._plain(self.core.list_node(_request_timeout=TIMEOUT)).get("items") or []:
            raw.setdefault("spec", {})
            raw.setdefault("status", {})
            raw.setdefault("metadata", {}).setdefault("labels", {})
            raw["spec"].setdefault("taints", [])
            raw["status"].setdefault("allocatable", {})
            try:
                node = node_from_object(raw)
            except ObjectError as exc:
                problems.append(str(exc))
                continue
            nodes[node.name] = node
        pods = self._plain(self.core.list_pod_for_all_namespaces(_request_timeout=TIMEOUT))
        used: dict[str, dict[str, int]] = {}
        #: Job key (ns/name) -> node -> what that copy's pods request there.
        ours: dict[str, dict[str, dict[str, int]]] = {}
        for pod in pods.get("items") or []:
            meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
            where = spec.get("nodeName")
            if (not where or where not in nodes
                    or (pod.get("status") or {}).get("phase") in _TERMINAL):
                continue
            try:
                requests = pod_requests(spec, f"pod {meta.get('namespace')}/{meta.get('name')}")
            except ObjectError as exc:
                problems.append(str(exc))
                continue
            if (meta.get("labels") or {}).get(ORIGIN_LABEL) == origin:
                job = _job_of(meta)
                if job is None:
                    continue
                add_pod(ours.setdefault(job, {}).setdefault(where, {}), requests)
            else:
                add_pod(used.setdefault(where, {}), requests)
        observed = tuple(
            node.with_requested(used.get(node.name) or {})
            for node in nodes.values())
        listed = self._plain(self.batch.list_job_for_all_namespaces(
            label_selector=f"{ORIGIN_LABEL}={origin}", _request_timeout=TIMEOUT))
        copies = []
        for job in listed.get("items") or []:
            meta = job.get("metadata") or {}
            namespace, name = meta.get("namespace") or "default", meta.get("name") or ""
            copies.append(Copy(namespace, name, workload_of(job) or "", job,
                               ours.get(f"{namespace}/{name}", {})))
        return Observation(observed, tuple(copies), tuple(problems))

    def create(self, body: Body) -> str:
        namespace = body["metadata"]["namespace"]
        try:
            self.core.read_namespace(namespace, _request_timeout=TIMEOUT)
        except ApiException as exc:
            if exc.status != 404:
                raise
            try:
                namespace_body: Any = {"apiVersion": "v1", "kind": "Namespace",
                                       "metadata": {"name": namespace}}
                self.core.create_namespace(namespace_body, _request_timeout=TIMEOUT)
            except ApiException as again:
                if again.status != 409:
                    raise
        try:
            job: Any = body  # the client sends a plain dict as it is
            self.batch.create_namespaced_job(namespace, job, _request_timeout=TIMEOUT)
        except ApiException as exc:
            if exc.status == 409:
                return "exists"
            if exc.status in REFUSALS:
                return refused(_api_error(exc))
            raise
        return "created"

    def delete(self, namespace: str, name: str) -> str:
        try:
            self.batch.delete_namespaced_job(name, namespace, propagation_policy="Foreground",
                                             _request_timeout=TIMEOUT)
        except ApiException as exc:
            if exc.status == 404:
                return "absent"
            raise
        return "deleted"


def _api_error(exc: ApiException) -> str:
    """``403 Forbidden: <the server's message>`` from an API error."""
    message = ""
    try:
        message = str(json.loads(exc.body or "{}").get("message") or "")
    except (ValueError, AttributeError):
        message = str(exc.body or "")[:300]
    return f"{exc.status} {exc.reason}" + (f": {message}" if message else "")


def _job_of(meta: Body) -> str | None:
    """``ns/name`` of the Job owning a pod (:func:`kuota.operator.names.pod_job`)."""
    name = names.pod_job(meta)
    return f"{meta.get('namespace') or 'default'}/{name}" if name else None

