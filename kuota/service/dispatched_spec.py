"""The spec of a dispatched workload: what a manager hands a pool to run (pure).

A workload dispatched to a pool (see :mod:`queueing.store.dispatched`) is
stored with this document as its ``spec``, instead of a Workload manifest::

    kind: DispatchedWorkload
    origin: <manager id>          # who sent it (also the record's ``origin`` field)
    workload: <ns/name>           # the manager's own workload it stands for
    member: <MemberCluster name>  # as the manager calls this pool
    pool: <pool name>             # the only pool it may run in
    backoffLimit: <n>             # gang restarts after a failed pod before it fails
    podSets:
    - name: main
      count: <pods>
      template: <a v1 PodSpec>    # nodeSelector already holds the flavors' nodeLabels

Everything the pool needs is derived from the pod template, with the
functions placement and the workers use for a Kubernetes pod:

* what a pod asks of a node — requests, ``nodeSelector``, required node
  affinity, tolerations — by :func:`placement.objects.pod_from_object`;
* what it runs — the first container's ``command`` followed by its ``args``,
  as an argument list (never a shell), with the container's literal ``env``
  values (``valueFrom`` has nothing to read from on a pool and is refused).
  A template whose first container has no command cannot run on a pool:
  :func:`check` refuses it, naming the field.

The admission stored with the record (:func:`admission`) names no
ClusterQueue and no flavors (each resource's flavor is ``""``) — the manager
admitted it against its own quotas; here it only records how many pods of
which requests run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from placement.model import PodRequirements
from placement.objects import ObjectError, pod_from_object
from quota.resources import ResourceVector
from quota.workload import Admission, PodSetAdmission

KIND: Final = "DispatchedWorkload"


class SpecError(ValueError):
    """A dispatched spec that cannot run on a pool (the message names the field)."""


@dataclass(frozen=True, slots=True)
class DispatchedPodSet:
    name: str
    count: int
    #: A v1 PodSpec (containers, nodeSelector, affinity, tolerations...).
    template: Mapping[str, Any]

    def requirements(self) -> PodRequirements:
        """What each pod of the set asks of a node."""
        try:
            return pod_from_object({"metadata": {"name": self.name},
                                    "spec": dict(self.template)})
        except ObjectError as exc:
            raise SpecError(f"podSets[{self.name}].template: {exc}") from exc

    def requests(self) -> ResourceVector:
        return dict(self.requirements().requests)

    def command(self) -> tuple[tuple[str, ...], dict[str, str]]:
        """The argument list and environment of the set's pods."""
        where = f"podSets[{self.name}].template.containers[0]"
        containers = self.template.get("containers")
        if not isinstance(containers, list) or not containers \
                or not isinstance(containers[0], Mapping):
            raise SpecError(f"{where}: a pod needs a container with a command")
        container = containers[0]
        command, args = container.get("command") or [], container.get("args") or []
        if not isinstance(command, list) or not isinstance(args, list):
            raise SpecError(f"{where}: command and args must be lists of strings")
        argv = tuple(str(a) for a in [*command, *args])
        if not command or not argv[0]:
            raise SpecError(f"{where}.command is required to run on a Redis worker pool "
                            "(the program to run; a pool has no images or entrypoints)")
        env: dict[str, str] = {}
        for i, entry in enumerate(container.get("env") or []):
            if not isinstance(entry, Mapping) or not entry.get("name"):
                raise SpecError(f"{where}.env[{i}]: needs a name")
            if "valueFrom" in entry:
                raise SpecError(f"{where}.env[{i}] ({entry['name']}): valueFrom cannot be "
                                "resolved on a Redis worker pool; give a literal value")
            env[str(entry["name"])] = str(entry.get("value") or "")
        return argv, env


@dataclass(frozen=True, slots=True)
class DispatchedSpec:
    origin: str
    workload: str
    member: str
    pool: str
    pod_sets: tuple[DispatchedPodSet, ...]
    backoff_limit: int = 0

    @property
    def pods(self) -> int:
        return sum(ps.count for ps in self.pod_sets)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": KIND, "origin": self.origin, "workload": self.workload,
                "member": self.member, "pool": self.pool, "backoffLimit": self.backoff_limit,
                "podSets": [{"name": ps.name, "count": ps.count, "template": dict(ps.template)}
                            for ps in self.pod_sets]}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], *, where: str = "dispatched workload"
                  ) -> DispatchedSpec:
        if doc.get("kind") != KIND:
            raise SpecError(f"{where}: kind must be {KIND}, got {doc.get('kind')!r}")
        for name in ("origin", "workload", "pool"):
            if not isinstance(doc.get(name), str) or not doc[name]:
                raise SpecError(f"{where}: {name} must be a non-empty string")
        raw_sets = doc.get("podSets")
        if not isinstance(raw_sets, list) or not raw_sets:
            raise SpecError(f"{where}: podSets must be a non-empty list")
        pod_sets = []
        for i, raw in enumerate(raw_sets):
            if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str) \
                    or not isinstance(raw.get("template"), Mapping):
                raise SpecError(f"{where}: podSets[{i}] needs a name and a template")
            count = raw.get("count")
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                raise SpecError(f"{where}: podSets[{i}].count must be a positive integer")
            pod_sets.append(DispatchedPodSet(raw["name"], count, dict(raw["template"])))
        limit = doc.get("backoffLimit", 0)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
            raise SpecError(f"{where}: backoffLimit must be a non-negative integer")
        return cls(doc["origin"], doc["workload"], str(doc.get("member") or ""), doc["pool"],
                   tuple(pod_sets), limit)


def check(spec: DispatchedSpec) -> None:
    """Raise :class:`SpecError` unless every pod set can run on a pool."""
    for ps in spec.pod_sets:
        ps.requirements()
        ps.command()


def admission(spec: DispatchedSpec) -> Admission:
    """The admission stored with the copy: no ClusterQueue, no flavors, the pods' usage."""
    pod_sets = []
    for ps in spec.pod_sets:
        requests = ps.requests()
        # No flavors here: the manager's flavors are not this store's ("" says so).
        pod_sets.append(PodSetAdmission(name=ps.name, count=ps.count,
                                        flavors=dict.fromkeys(requests, ""),
                                        usage={r: a * ps.count for r, a in requests.items()}))
    return Admission("", tuple(pod_sets))
