"""A Kubernetes member cluster through the ``kubernetes`` client (blocking; run it in tasks).

Connection: a kubeconfig document (from a Secret's ``data.kubeconfig`` or a
file, read by the operator) becomes an ``ApiClient``; clients are cached per
kubeconfig, so the worker thread keeps its connections alive between tasks.

Every call has a short timeout (:data:`.member_watch.TIMEOUT`): a member
that does not answer fails the task quickly, and the task's retries and the
member's health take it from there. An observation reads the member's mirror
(:mod:`.member_watch`: its nodes and pods listed in pages once, then watched)
after listing this manager's copies there, which is also the health check;
:mod:`.observation` says what is counted.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any, Final

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from kuota.federation import copies, member_watch
from kuota.federation.member import Body, Observation, refused
from kuota.federation.member_watch import TIMEOUT

#: Answers to a create that retrying the same request cannot change: bad request, forbidden
#: (an admission webhook, a ResourceQuota, RBAC), invalid on that cluster.
REFUSALS: Final = frozenset({400, 403, 422})

_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


def digest_of(kubeconfig: Body) -> str:
    return hashlib.sha256(json.dumps(kubeconfig, sort_keys=True).encode()).hexdigest()


def api_client(kubeconfig: Body) -> Any:
    """A cached ``ApiClient`` for one kubeconfig document."""
    digest = digest_of(kubeconfig)
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
        self._key = digest_of(kubeconfig)
        self._api = api_client(kubeconfig)
        self.core = k8s.CoreV1Api(self._api)
        self.batch = k8s.BatchV1Api(self._api)
        self.custom = k8s.CustomObjectsApi(self._api)

    def observe(self, origin: str) -> Observation:
        return member_watch.mirror(self._key, self._api, origin).observe()

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
            self._create(copies.kind_of(body), namespace, body)
        except ApiException as exc:
            if exc.status == 409:
                return "exists"
            if exc.status in REFUSALS:
                return refused(_api_error(exc))
            raise
        return "created"

    def _create(self, kind: str, namespace: str, body: Body) -> None:
        if kind == "Job":
            job: Any = body  # the client sends a plain dict as it is
            self.batch.create_namespaced_job(namespace, job, _request_timeout=TIMEOUT)
            return
        res = copies.DISPATCHED[kind]
        self.custom.create_namespaced_custom_object(res.group, res.version, namespace,
                                                    res.plural, body, _request_timeout=TIMEOUT)

    def delete(self, namespace: str, name: str, kind: str = "Job") -> str:
        try:
            if kind == "Job":
                self.batch.delete_namespaced_job(name, namespace,
                                                 propagation_policy="Foreground",
                                                 _request_timeout=TIMEOUT)
            else:
                res = copies.DISPATCHED[kind]
                self.custom.delete_namespaced_custom_object(
                    res.group, res.version, namespace, res.plural, name,
                    propagation_policy="Foreground", _request_timeout=TIMEOUT)
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
