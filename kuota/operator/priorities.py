"""A new Workload's priority, resolved as Kueue resolves it (``jobframework.ExtractPriority``).

1. The owner's ``priority-class`` label (``kuota.dev/`` or ``kueue.x-k8s.io/``)
   names a WorkloadPriorityClass: its value, and a ``priorityClassRef`` to it.
2. Else the first pod template's ``priorityClassName`` names a Kubernetes
   PriorityClass (``scheduling.k8s.io``): its value, and a ``priorityClassRef``
   to it. Its value cannot change (the API server refuses the update), so each
   class is read once.
3. Else priority 0 and no class.

A class that is named but does not exist gets the owner *no* Workload until it
does: Kueue's reconciler fails on the missing class and tries again, rather
than queueing the job at a priority its author did not ask for. The owner
gets a Warning Event (``PriorityClassNotFound``) and its creation is tried again
with the writer's backoff; a WorkloadPriorityClass that appears triggers the
creation at once (:meth:`kuota.operator.configs.Configs.wait_for_class`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kuota.operator import names
from kuota.operator.kinds.contract import PriorityClass, pod_priority_class

if TYPE_CHECKING:
    from kuota.operator.owner_writes import OwnerWrites

Body = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Missing:
    """A named class that does not exist (yet)."""

    cls: PriorityClass

    def text(self) -> str:
        kind = "PriorityClass" if self.cls.pod else "WorkloadPriorityClass"
        return f"{kind} {self.cls.name} not found"


async def resolve(writer: OwnerWrites, labels: dict[str, str], pod_sets: list[Body]
                  ) -> tuple[int, PriorityClass | None] | Missing:
    """The priority and its class for a Workload of ``pod_sets`` whose owner carries
    ``labels``; :class:`Missing` when the class it names does not exist."""
    configs = writer.controller.configs
    name = names.first_of(labels, names.PRIORITY_LABELS)
    if name:
        if name not in configs.priority_classes:
            return Missing(PriorityClass(name))
        return configs.priority_classes[name], PriorityClass(name)
    pod_class = pod_priority_class(pod_sets)
    if pod_class is None:
        return 0, None
    value = configs.pod_priority_classes.get(pod_class)
    if value is None:
        found = await writer.client.find(names.POD_PRIORITY_CLASSES, pod_class)
        raw = (found or {}).get("value")
        if not isinstance(raw, int) or isinstance(raw, bool):
            return Missing(PriorityClass(pod_class, pod=True))
        value = configs.pod_priority_classes[pod_class] = raw
    return value, PriorityClass(pod_class, pod=True)


def apply(manifest: Body, priority: int, cls: PriorityClass | None) -> Body:
    """``manifest`` (a Workload) with the resolved priority and its class."""
    manifest["spec"]["priority"] = priority
    if cls is not None:
        manifest["spec"]["priorityClassRef"] = cls.ref()
    return manifest


def wait(writer: OwnerWrites, missing: Missing, owner: Body, work: str,
         again: Callable[[], None]) -> None:
    """No Workload for ``owner`` while its class is missing: say so once, try again later
    (and as soon as a WorkloadPriorityClass of that name appears)."""
    meta = owner.get("metadata") or {}
    message = (f"{owner.get('kind') or 'object'} {meta.get('namespace') or 'default'}/"
               f"{meta.get('name')} is not queued: {missing.text()}; its Workload is "
               f"created once the class exists")
    if writer.report(work, message):
        writer.recorder.event(owner, "Warning", "PriorityClassNotFound", message)
    writer.retry(work, again)
    if not missing.cls.pod:
        writer.controller.configs.wait_for_class(missing.cls.name, work, again)
