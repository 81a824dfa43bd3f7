"""The kinds of objects kuota queues, each filling in one contract.

:mod:`~kuota.operator.kinds.contract` says what a kind must tell kuota
(Kueue's ``GenericJob``); each other module here is one kind. :data:`KINDS`
lists the suspendable ones by kind name, in the order the operator reads
them; pod groups (:mod:`~kuota.operator.kinds.podgroups`) are the kind
stopped by deleting pods instead.

An object's *owner key* names it across kinds: ``Kind:namespace/name``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kuota.operator.kinds import kubeflow
from kuota.operator.kinds.contract import WorkloadKind
from kuota.operator.kinds.jobs import JOB
from kuota.operator.kinds.jobsets import JOBSET
from kuota.operator.kinds.ray import RAYCLUSTER, RAYJOB
from kuota.operator.kinds.trainjobs import TRAINJOB

KINDS: dict[str, WorkloadKind] = {kind.kind: kind for kind in (
    JOB, JOBSET, TRAINJOB, *kubeflow.KINDS, RAYJOB, RAYCLUSTER)}
#: The owner key's kind of a pod group (not a served kind: a set of pods).
POD_GROUP = "PodGroup"


def owner_key(kind: str, key: str) -> str:
    """``Kind:namespace/name``."""
    return f"{kind}:{key}"


def split_owner(owner: str) -> tuple[str, str]:
    """(kind, ``namespace/name``) of an owner key."""
    kind, _, key = owner.partition(":")
    return kind, key


def owner_of(meta: Mapping[str, Any]) -> str | None:
    """The owner key of the object (of a kind kuota queues) that controls an object with
    this ``metadata`` — a Workload, or a JobSet's child Job — if any."""
    for ref in meta.get("ownerReferences") or []:
        kind = KINDS.get(str(ref.get("kind") or ""))
        if kind is not None and ref.get("apiVersion") == kind.res.api_version \
                and ref.get("name"):
            return owner_key(kind.kind, f"{meta.get('namespace') or 'default'}/{ref['name']}")
    return None
