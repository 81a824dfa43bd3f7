"""Kubeflow training jobs (``kubeflow.org``): the v1 training operator's PyTorchJob,
TFJob, XGBoostJob, PaddleJob and JAXJob, and the MPI operator's MPIJob (v2beta1).

They share one shape: ``spec.runPolicy.suspend`` suspends the job (its
operator then deletes its pods), and a map of *replica specs* —
``spec.pytorchReplicaSpecs: {Master: {replicas, template}, Worker: ...}`` —
gives each role its pod template and count (``replicas``, 1 when unset). As
in Kueue, each role present is one pod set named after its replica type in
lower case (``master``, ``worker``, ``launcher``), in the operator's own
order of replica types, so a Workload reads as Kueue's does. The job ends
with the condition ``Succeeded`` or ``Failed``; it is running (its pods
ready) with ``Running``; ``status.replicaStatuses[*].active`` counts the
pods still there after a suspension.
"""

from __future__ import annotations

from typing import Any

from kuota.operator.kinds.contract import ended_by
from kuota.operator.kinds.templated import Role, TemplatedKind
from kuota.operator.names import Res

Body = dict[str, Any]


class ReplicaSpecsKind(TemplatedKind):
    """A Kubeflow job kind: where its replica specs are, and their order."""

    suspend_path = ("spec", "runPolicy", "suspend")

    def __init__(self, kind: str, group: str, version: str, field: str,
                 order: tuple[str, ...]) -> None:
        self.kind = kind
        self.res = Res(group, version, f"{kind.lower()}s", kind, True)
        self.prefix = kind.lower()
        self.field = field
        self.order = order

    def roles(self, obj: Body) -> list[Role]:
        specs = (obj.get("spec") or {}).get(self.field) or {}
        out = []
        for replica_type in self.order:
            spec = specs.get(replica_type)
            if not isinstance(spec, dict):
                continue
            replicas = spec.get("replicas")
            out.append(Role(replica_type.lower(), 1 if replicas is None else int(replicas),
                            spec.setdefault("template", {})))
        return out

    def pods_left(self, obj: Body) -> int:
        statuses = (obj.get("status") or {}).get("replicaStatuses") or {}
        return sum(int((s or {}).get("active") or 0) for s in statuses.values())

    def finished(self, obj: Body) -> tuple[str, str] | None:
        return ended_by(obj, "Succeeded", "Failed", what=self.kind)

    def pods_ready(self, obj: Body) -> bool:
        return any(c.get("type") == "Running" and c.get("status") == "True"
                   for c in (obj.get("status") or {}).get("conditions") or [])


def _v1(kind: str, field: str, order: tuple[str, ...]) -> ReplicaSpecsKind:
    return ReplicaSpecsKind(kind, "kubeflow.org", "v1", field, order)


PYTORCHJOB = _v1("PyTorchJob", "pytorchReplicaSpecs", ("Master", "Worker"))
TFJOB = _v1("TFJob", "tfReplicaSpecs", ("Chief", "Master", "PS", "Worker", "Evaluator"))
XGBOOSTJOB = _v1("XGBoostJob", "xgbReplicaSpecs", ("Master", "Worker"))
PADDLEJOB = _v1("PaddleJob", "paddleReplicaSpecs", ("Master", "Worker"))
JAXJOB = _v1("JAXJob", "jaxReplicaSpecs", ("Worker",))
MPIJOB = ReplicaSpecsKind("MPIJob", "kubeflow.org", "v2beta1", "mpiReplicaSpecs",
                          ("Launcher", "Worker"))
KINDS = (PYTORCHJOB, TFJOB, XGBOOSTJOB, PADDLEJOB, JAXJOB, MPIJOB)
