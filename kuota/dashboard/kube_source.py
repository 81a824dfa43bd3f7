"""The dashboard over a Kubernetes cluster: the kuota objects, read with list calls.

Each read lists the queue objects, Workloads, MemberClusters and namespaces
(one list call per kind, as ``kubectl get`` does) with the kubeconfig's
credentials, and :func:`kuota.dashboard.objects.build` turns them into the
overview. A workload's page reads its Workload and the Events about it.
Where a Workload runs is read from its pods: those of Jobs and pod groups that
are bound to a node (two list calls, by label and ``spec.nodeName``). Only get
and list are used: the dashboard needs read-only RBAC (a ClusterRole with
get/list on kuota.dev objects, namespaces, events and pods); without the right
to list namespaces, events or pods it shows what it can.
"""

from __future__ import annotations

import time
from typing import Any

from kuota import explanation
from kuota.dashboard import objects
from kuota.dashboard.model import Facts, Overview, WorkloadPage, workload_page
from quota import api
from quota.api.base import GROUP, VERSION

#: kind -> plural of the kuota.dev objects the overview lists.
PLURALS = {"ResourceFlavor": "resourceflavors", "AdmissionCheck": "admissionchecks",
           "Cohort": "cohorts", "ClusterQueue": "clusterqueues", "LocalQueue": "localqueues",
           "WorkloadPriorityClass": "workloadpriorityclasses", "Workload": "workloads",
           "MemberCluster": "memberclusters"}


class KubeSource:
    def __init__(self, api_client: Any, description: str) -> None:
        from kubernetes import client

        self.api_client = api_client
        self.custom = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)
        self.description = description

    @classmethod
    def connect(cls, kubeconfig: str, context: str | None) -> KubeSource:
        from kubernetes import config

        try:
            api_client = config.new_client_from_config(  # type: ignore[no-untyped-call]
                config_file=kubeconfig, context=context)
        except (config.ConfigException, OSError) as exc:
            raise ValueError(f"--kubeconfig {kubeconfig}: {exc}") from None
        host = api_client.configuration.host
        return cls(api_client, f"Kubernetes {host}" + (f" (context {context})" if context else ""))

    def _list(self, kind: str) -> list[objects.Body]:
        from kubernetes.client.exceptions import ApiException

        try:  # across all namespaces for the namespaced kinds
            reply: Any = self.custom.list_cluster_custom_object(GROUP, VERSION, PLURALS[kind])
        except ApiException as exc:
            if exc.status == 404:  # that CRD is not installed (e.g. no multi-cluster)
                return []
            raise
        return list(reply.get("items") or [])

    def overview(self) -> Overview:
        from kubernetes.client.exceptions import ApiException

        listed = objects.Objects({kind: self._list(kind) for kind in PLURALS})
        try:
            for ns in self.core.list_namespace().items:
                meta: Any = ns.metadata
                listed.namespaces[str(meta.name)] = dict(meta.labels or {})
        except ApiException as exc:
            if exc.status != 403:
                raise
            # No right to list namespaces: selectors are judged without their labels.
        listed.pods = self._bound_pods()
        return objects.build(listed, source=self.description, now=time.time())

    def _bound_pods(self) -> list[objects.Body]:
        """Pods of Jobs and pod groups that are bound to a node (for "nodes")."""
        from kubernetes.client.exceptions import ApiException

        pods: list[objects.Body] = []
        for label in (*objects.JOB_LABELS[:1], *objects.GROUP_LABELS):
            try:
                reply = self.core.list_pod_for_all_namespaces(
                    label_selector=label, field_selector="spec.nodeName!=")
            except ApiException as exc:
                if exc.status != 403:
                    raise
                return []  # no right to list pods: nodes are not shown
            pods += [self.api_client.sanitize_for_serialization(p) for p in reply.items]
        return pods

    def workload(self, key: str, overview: Overview | None) -> WorkloadPage | None:
        from kubernetes.client.exceptions import ApiException

        namespace, _, name = key.partition("/")
        try:
            body: Any = self.custom.get_namespaced_custom_object(GROUP, VERSION, namespace,
                                                            "workloads", name)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        obj = api.parse_object(body, source=f"Workload {key}")
        if not isinstance(obj, api.Workload):
            return None
        try:
            events = self.core.list_namespaced_event(
                namespace, field_selector=f"involvedObject.kind=Workload,"
                                          f"involvedObject.name={name}")
            event_bodies = [self.api_client.sanitize_for_serialization(e)
                            for e in events.items]
        except ApiException as exc:
            if exc.status != 403:
                raise
            event_bodies = []
        view = explanation.from_object(obj)
        return workload_page(Facts(view), overview, objects.history(obj, event_bodies),
                             objects.conditions(obj))
