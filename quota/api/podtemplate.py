"""The part of a pod template kuota reads, and the per-pod request Kubernetes derives from it.

Pod templates are large and evolve with Kubernetes; kuota types only what it
reads — containers' resources, init containers and their restart policy,
overhead, pod-level resources, nodeSelector, required node affinity,
tolerations, scheduling gates — and keeps every other field as written.

**Effective request of one pod** (what the scheduler reserves; Kueue counts
the same):

1. A container's request for a resource is its ``requests`` entry, or its
   ``limits`` entry when the request is absent (API defaulting).
2. App containers run together: their requests add up. Sidecars (init
   containers with ``restartPolicy: Always``) keep running next to them, so
   they add too.
3. Plain init containers run one at a time before the app containers, each
   alongside the sidecars started before it: the pod needs, per resource,
   the largest of those moments.
4. The pod needs the larger of (2) and (3), per resource; pod-level
   ``resources`` replace that figure for the resources they name; then the
   runtime class ``overhead`` is added.

Resources whose effective request is zero are left out (asked for, they
still get a flavor: :meth:`quota.api.PodSet.zero_requests`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from pydantic import Field

from quota.api.base import OpenModel
from quota.api.meta import ObjectMeta, Toleration
from quota.api.quantity import Quantity, RequestQuantity, amounts, request_amounts
from quota.resources import Amount, ResourceVector


class ResourceRequirements(OpenModel):
    """Requests and limits of a container (or of the whole pod)."""

    requests: dict[str, RequestQuantity] = Field(
        default_factory=dict, description="Amount reserved per resource."
    )
    limits: dict[str, RequestQuantity] = Field(
        default_factory=dict,
        description="Maximum per resource; also the request when none is given.",
    )

    def effective_requests(self) -> ResourceVector:
        """Requests, with limits standing in for absent requests."""
        return request_amounts({**self.limits, **self.requests})


class EnvVar(OpenModel):
    """An environment variable."""

    name: str = Field(description="Variable name.")
    value: str | None = Field(default=None, description="Value.")


class Container(OpenModel):
    """A container of a pod template (only the fields kuota reads are typed)."""

    name: str = Field(description="Container name.")
    image: str | None = Field(default=None, description="Container image.")
    command: tuple[str, ...] | None = Field(default=None, description="Entrypoint.")
    args: tuple[str, ...] | None = Field(default=None, description="Arguments.")
    env: tuple[EnvVar, ...] | None = Field(default=None, description="Environment variables.")
    resources: ResourceRequirements = Field(
        default_factory=ResourceRequirements, description="Requests and limits."
    )
    restart_policy: Literal["Always"] | None = Field(
        default=None, description="Always on an init container makes it a sidecar."
    )


class NodeSelectorRequirement(OpenModel):
    """A node label expression of node affinity."""

    key: str = Field(description="Node label key.")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"] = Field(
        description="How the label is compared with values."
    )
    values: tuple[str, ...] = Field(default=(), description="Values to compare with.")

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        if self.operator == "In":
            return value is not None and value in self.values
        if self.operator == "NotIn":
            return value is None or value not in self.values
        if self.operator == "Exists":
            return value is not None
        if self.operator == "DoesNotExist":
            return value is None
        if value is None or len(self.values) != 1:
            return False
        try:
            have, want = int(value), int(self.values[0])
        except ValueError:
            return False
        return have > want if self.operator == "Gt" else have < want


class NodeSelectorTerm(OpenModel):
    """Expressions that must all hold for a node."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = Field(
        default=(), description="Label expressions, all required."
    )

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Kubernetes: an empty term matches no node. Terms that only hold ``matchFields``
        (node name, not labels) are not decided by labels, so they do not exclude."""
        if not self.match_expressions:
            return bool((self.model_extra or {}).get("matchFields"))
        return all(e.matches(labels) for e in self.match_expressions)


class NodeSelector(OpenModel):
    """Terms of which at least one must hold."""

    node_selector_terms: tuple[NodeSelectorTerm, ...] = Field(
        default=(), description="Alternatives; a node must satisfy one."
    )

    def matches(self, labels: Mapping[str, str]) -> bool:
        return any(t.matches(labels) for t in self.node_selector_terms)


class NodeAffinity(OpenModel):
    """Node affinity; kuota reads only the required part."""

    required_during_scheduling_ignored_during_execution: NodeSelector | None = Field(
        default=None, description="Nodes the pod may run on."
    )


class Affinity(OpenModel):
    """Pod affinity rules; kuota reads only node affinity."""

    node_affinity: NodeAffinity | None = Field(default=None, description="Node affinity.")


class PodSchedulingGate(OpenModel):
    """A gate that keeps a pod from being scheduled until removed."""

    name: str = Field(description="Gate name.")


class PodSpec(OpenModel):
    """A pod spec (only the fields kuota reads are typed)."""

    containers: tuple[Container, ...] = Field(default=(), description="App containers.")
    init_containers: tuple[Container, ...] = Field(
        default=(),
        description="Init containers, run in order; restartPolicy Always makes a sidecar.",
    )
    overhead: dict[str, Quantity] = Field(
        default_factory=dict, description="Runtime class overhead added to the pod's requests."
    )
    resources: ResourceRequirements | None = Field(
        default=None, description="Pod-level requests and limits."
    )
    node_selector: dict[str, str] = Field(default_factory=dict, description="Required node labels.")
    affinity: Affinity | None = Field(default=None, description="Affinity rules.")
    tolerations: tuple[Toleration, ...] = Field(default=(), description="Tolerated taints.")
    scheduling_gates: tuple[PodSchedulingGate, ...] = Field(
        default=(), description="Gates that hold the pod back from scheduling."
    )
    priority_class_name: str | None = Field(default=None, description="Pod priority class.")

    def required_node_selector(self) -> NodeSelector | None:
        """The required node affinity, if any."""
        if self.affinity and self.affinity.node_affinity:
            return self.affinity.node_affinity.required_during_scheduling_ignored_during_execution
        return None


class PodTemplateSpec(OpenModel):
    """Pod template: metadata (labels, annotations) and spec."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta, description="Labels and annotations.")
    spec: PodSpec = Field(default_factory=PodSpec, description="The pod spec.")


def _add(into: dict[str, Amount], vector: Mapping[str, Amount]) -> None:
    for name, value in vector.items():
        into[name] = into.get(name, 0) + value


def _max(vectors: Iterable[Mapping[str, Amount]]) -> ResourceVector:
    out: ResourceVector = {}
    for vector in vectors:
        for name, value in vector.items():
            out[name] = max(out.get(name, 0), value)
    return out


def pod_requests(spec: PodSpec, *, keep_zero: bool = False) -> ResourceVector:
    """Effective per-pod request (see the module docstring for the rule); with
    ``keep_zero``, the resources asked for at zero stay, at zero."""
    running: ResourceVector = {}
    for container in spec.containers:
        _add(running, container.resources.effective_requests())
    sidecars: ResourceVector = {}
    init_peaks: list[ResourceVector] = []
    for container in spec.init_containers:
        own = container.resources.effective_requests()
        if container.restart_policy == "Always":
            _add(running, own)
            _add(sidecars, own)
            init_peaks.append(dict(sidecars))
        else:
            moment = dict(own)
            _add(moment, sidecars)
            init_peaks.append(moment)
    total = _max([running, *init_peaks])
    if spec.resources is not None:
        total.update(spec.resources.effective_requests())
    _add(total, amounts(spec.overhead))
    return total if keep_zero else {name: value for name, value in total.items() if value}
