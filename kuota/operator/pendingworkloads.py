"""Pending positions on Kubernetes: the ``visibility.kuota.dev`` API's documents.

Which workload is next, and where mine stands, is state only the leading
replica holds: the order of its pending queues. Writing it into objects
(a position in every pending Workload's status, or the first N in a
ClusterQueue's status — Kueue's own first design, dropped in its v1beta2)
costs a write per workload each time the order moves, which at thousands of
pending workloads is a write storm for a figure nobody may be reading. So,
as Kueue does in v1beta2, the order is served on demand through the API
server's aggregation layer: an APIService ``v1beta2.visibility.kuota.dev``
sends these paths to the operator, which answers from the engine's queues
(:mod:`kuota.operator.visibility` is the HTTPS server, authentication and
authorization); kubectl and the kubectl plugin read them like any API::

    /apis/visibility.kuota.dev/v1beta2/clusterqueues/NAME/pendingworkloads
    /apis/visibility.kuota.dev/v1beta2/namespaces/NS/localqueues/NAME/pendingworkloads

Both take ``offset`` (first position, default 0) and ``limit`` (default
1,000) and answer a ``PendingWorkloadsSummary`` whose items carry Kueue's
fields (``priority``, ``localQueueName``, ``positionInClusterQueue``,
``positionInLocalQueue``, 0-based) and, beyond Kueue's, ``reason`` and
``message``: why the workload waits, as its ``QuotaReserved`` condition says.
Workloads set aside as inadmissible (they can never fit as the queues are
configured, or have no queue) come last with ``inadmissible: true`` and the
reason that sets them aside: they block no one, as in Kueue's lists, where
the inadmissible follow the active heap.

With ``kuota operator --api kueue`` the same documents are served as Kueue
serves them, under ``visibility.kueue.x-k8s.io`` in ``v1beta2`` and
``v1beta1`` (:data:`KUEUE`), so ``kueuectl list workload`` shows positions.

This module is pure: it turns an engine's queues and the cached Workload
bodies into those documents, and parses the query. Only the types of the
resources are listed in discovery (as subresources), never ``clusterqueues``
itself, so ``kubectl get clusterqueues`` keeps finding ``kuota.dev``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from admission.engine import Engine
from quota.workload import WorkloadInfo


@dataclass(frozen=True)
class Api:
    """A served visibility API group and its versions, the preferred one first."""

    group: str
    versions: tuple[str, ...]

    def group_version(self, version: str) -> str:
        return f"{self.group}/{version}"


KUOTA = Api("visibility.kuota.dev", ("v1beta2",))
KUEUE = Api("visibility.kueue.x-k8s.io", ("v1beta2", "v1beta1"))
GROUP_VERSION = KUOTA.group_version(KUOTA.versions[0])
DEFAULT_LIMIT = 1000
MAX_LIMIT = 100_000

Body = dict[str, Any]


class RequestError(Exception):
    """A request this API refuses: the HTTP status, Kubernetes' reason, a message."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message


def status(code: int, reason: str, message: str) -> Body:
    """A ``metav1.Status`` failure, as every Kubernetes API answers an error."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


@dataclass(frozen=True)
class Page:
    offset: int = 0
    limit: int = DEFAULT_LIMIT


def page(query: Mapping[str, str]) -> Page:
    """``offset`` and ``limit`` from a query string, or a 400 naming the bad parameter."""
    values = {"offset": 0, "limit": DEFAULT_LIMIT}
    for name in values:
        text = query.get(name)
        if text is None or text == "":
            continue
        try:
            values[name] = int(text)
        except ValueError:
            raise RequestError(400, "BadRequest",
                               f"query parameter {name}: {text!r} is not an integer") from None
        if values[name] < 0:
            raise RequestError(400, "BadRequest",
                               f"query parameter {name}: must be >= 0, got {values[name]}")
    # Kueue treats limit 0 as "the default"; so does Kubernetes' list limit.
    limit = values["limit"] or DEFAULT_LIMIT
    return Page(values["offset"], min(limit, MAX_LIMIT))


def api_group(api: Api = KUOTA) -> Body:
    versions = [{"groupVersion": api.group_version(v), "version": v} for v in api.versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": api.group, "versions": versions,
            "preferredVersion": versions[0]}


def api_group_list(api: Api = KUOTA) -> Body:
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [api_group(api)]}


def api_resource_list(api: Api = KUOTA, version: str = KUOTA.versions[0]) -> Body:
    def subresource(parent: str, kind: str, namespaced: bool) -> Body:
        return {"name": f"{parent}/pendingworkloads", "singularName": "", "kind": kind,
                "namespaced": namespaced, "verbs": ["get"]}

    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": api.group_version(version),
            "resources": [subresource("clusterqueues", "PendingWorkloadsSummary", False),
                          subresource("localqueues", "PendingWorkloadsSummary", True)]}


def _waiting_condition(body: Body | None) -> tuple[str, str]:
    for cond in ((body or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == "QuotaReserved" and cond.get("status") == "False":
            return str(cond.get("reason", "")), str(cond.get("message", ""))
    return "", ""


def _item(info: WorkloadInfo, body: Body | None, in_cq: int, in_lq: int,
          aside: tuple[str, str] | None) -> Body:
    meta = (body or {}).get("metadata") or {}
    metadata: Body = {"name": info.name, "namespace": info.namespace,
                      "creationTimestamp": meta.get("creationTimestamp")}
    if meta.get("ownerReferences"):
        metadata["ownerReferences"] = meta["ownerReferences"]
    reason, message = aside or _waiting_condition(body)
    item: Body = {"metadata": metadata, "priority": info.priority,
                  "localQueueName": info.queue_name, "positionInClusterQueue": in_cq,
                  "positionInLocalQueue": in_lq, "reason": reason, "message": message}
    if aside is not None:
        item["inadmissible"] = True
    return item


def _summary(rows: Iterable[tuple[WorkloadInfo, int, int]], at: Page,
             workload: Callable[[str], Body | None], group_version: str,
             aside: Callable[[str], tuple[str, str] | None]) -> Body:
    items: list[Body] = []
    for index, (info, in_cq, in_lq) in enumerate(rows):
        if index < at.offset:
            continue
        if len(items) >= at.limit:
            break
        items.append(_item(info, workload(info.key), in_cq, in_lq, aside(info.key)))
    return {"kind": "PendingWorkloadsSummary", "apiVersion": group_version,
            "metadata": {"creationTimestamp": None}, "items": items}


def cluster_queue(engine: Engine, name: str, at: Page,
                  workload: Callable[[str], Body | None], group_version: str = GROUP_VERSION
                  ) -> Body:
    """The ClusterQueue's pending workloads in admission order, from ``at.offset``."""
    if name not in engine.cache.cluster_queues:
        raise RequestError(404, "NotFound",
                           f'clusterqueues.{group_version.split("/")[0]} "{name}" not found')
    return _summary(engine.queues.positions(name), at, workload, group_version,
                    engine.queues.set_aside)


def local_queue(engine: Engine, namespace: str, name: str, at: Page,
                workload: Callable[[str], Body | None], group_version: str = GROUP_VERSION
                ) -> Body:
    """The LocalQueue's pending workloads in its ClusterQueue's order.

    ``offset`` counts positions in the LocalQueue (as ``positionInLocalQueue``)."""
    key = f"{namespace}/{name}"
    config = engine.cache.local_queues.get(key)
    if config is None:
        raise RequestError(404, "NotFound", f'localqueues.{group_version.split("/")[0]} '
                                            f'"{name}" not found in namespace {namespace}')
    rows = ((info, in_cq, in_lq)
            for info, in_cq, in_lq in engine.queues.positions(config.cluster_queue)
            if info.local_queue_key == key)
    return _summary(rows, at, workload, group_version, engine.queues.set_aside)
