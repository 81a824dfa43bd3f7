"""Kubernetes Events about Workloads and Jobs: what kuota decided, for ``kubectl describe``.

Each decision written (:mod:`kuota.operator.writer`) is announced on its Workload —
admitted (with the wait since it was queued), quota reserved, evicted or preempted
(also on its Job), deactivated, finished — as Kueue announces them, and other parts of
the operator post their own (a Job write refused, a pod group that cannot start, a Job
whose Workload can never fit as the queues are configured: a Warning naming why). An
Event is posted in the background, at most four at a time, and one the API server
refuses is only logged: Events are news, never state.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from admission.events import Kind, WorkloadEvent
from kuota.operator import names, status
from kuota.operator.client import ApiError, Client

if TYPE_CHECKING:
    from kuota.operator.controller import Controller

log = logging.getLogger(__name__)
Body = dict[str, Any]


class Recorder:
    def __init__(self, controller: Controller, client: Client, identity: str,
                 background: Callable[[Awaitable[None]], None]) -> None:
        self.controller = controller
        self.client = client
        self.identity = identity
        self._background = background
        self._slots = asyncio.Semaphore(4)

    def announce(self, event: WorkloadEvent, owner: str | None) -> None:
        """The Events a decision written is worth, on its Workload (and, for an eviction,
        on the object it stands for: ``owner``, a key of :mod:`kuota.operator.kinds`)."""
        objects = self.controller.objects
        workload = objects.get("Workload", event.key)
        job = self.controller.owners.object_of(owner) if owner else None
        if event.kind is Kind.ADMITTED and event.admission is not None:
            engine = self.controller.engine
            record = engine.records.get(event.key) if engine is not None else None
            waited = f", wait time since queued was {event.at - record.info.created:.0f}s" \
                if record is not None else ""
            text = f"Admitted by ClusterQueue {event.admission.cluster_queue}{waited}"
            self.event(workload, "Normal", "Admitted", text)
        elif event.kind is Kind.QUOTA_RESERVED and event.admission is not None:
            self.event(workload, "Normal", "QuotaReserved",
                       f"Quota reserved in ClusterQueue {event.admission.cluster_queue}")
        elif event.kind is Kind.EVICTING and event.reason != "Deactivated":
            # Announced when it is decided; Deactivated is announced when it is done.
            reason = "Preempted" if event.reason == "Preempted" else "Evicted"
            text = f"{event.reason}{'/' + event.detail if event.detail else ''}: {event.message}"
            self.event(workload, "Normal", reason, text)
            self.event(job, "Normal", reason, text)
        elif event.kind is Kind.DEACTIVATED:
            self.event(workload, "Warning", "Deactivated", f"{event.reason}: {event.message}")
        elif event.kind is Kind.FINISHED:
            self.event(workload, "Normal", "Finished", event.message or "quota released")

    def never_fits(self, key: str, owner: str | None, reason: str, message: str) -> None:
        """A Warning on the object Workload ``key`` stands for (``owner``): it can never be
        admitted as the queues are configured, so it stays suspended until they change."""
        job = self.controller.owners.object_of(owner) if owner else None
        self.event(job, "Warning", reason,
                   f"Workload {key} can never be admitted as the queues are configured: "
                   f"{message}")

    def event(self, obj: Body | None, type_: str, reason: str, message: str) -> None:
        """Post an Event about ``obj`` in the background (none when Events are off)."""
        if obj is None or not self.controller.options.events:
            return
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        stamp = status.timestamp(self.controller.clock())
        body = {
            "metadata": {"generateName": f"{meta.get('name', 'object')}.",
                         "namespace": namespace},
            "involvedObject": {"apiVersion": obj.get("apiVersion", ""),
                               "kind": obj.get("kind", ""), "name": meta.get("name", ""),
                               "namespace": namespace, "uid": meta.get("uid", ""),
                               "resourceVersion": meta.get("resourceVersion", "")},
            "reason": reason, "message": message[:1024], "type": type_,
            "source": {"component": names.COMPONENT},
            "reportingComponent": names.COMPONENT, "reportingInstance": self.identity,
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
        }

        async def post() -> None:
            async with self._slots:
                try:
                    await self.client.create(names.EVENTS, body, namespace)
                except ApiError as exc:
                    log.info("event %s on %s not posted: %s", reason, meta.get("name"), exc)

        self._background(post())
