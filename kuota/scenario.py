"""Simulator scenarios: queue objects, a stream of workloads, and expectations.

A scenario is one YAML mapping::

    config:          # optional deployment settings (fair sharing, pods-ready)
    objects:         # ResourceFlavors, Cohorts, ClusterQueues, LocalQueues,
                     # WorkloadPriorityClasses, Namespaces — exactly as manifests
    workloads:       # what arrives, when, and how long it runs once admitted
    expect:          # optional: a partial simulate --output json document

Times are seconds, or strings like ``"90s"``, ``"2m"``, ``"1h"``. The
``expect`` block is matched as a subset of the simulator's JSON result, so a
scenario file is both the input of ``kuota simulate`` and a test case.
See docs/simulator.md for the full format.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from placement.model import Node
from placement.topology import Topology, from_object
from quota import api, convert
from quota.api import Problem, yaml_input
from quota.config import (
    AdmissionCheckConfig,
    ClusterQueueConfig,
    CohortConfig,
    EngineConfig,
    FlavorConfig,
    LocalQueueConfig,
    PodsReadyConfig,
    RequeuingStrategy,
)
from quota.resources import parse_amount
from quota.workload import PodSetInfo, WorkloadInfo

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT = {None: 1.0, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_seconds(value: object) -> float:
    """``30`` → 30.0, ``"90s"`` → 90.0, ``"2m"`` → 120.0."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError(f"{value!r} must not be negative")
        return float(value)
    match = _DURATION.match(str(value))
    if not match:
        raise ValueError(f"{value!r} is not a duration (use seconds or 90s, 2m, 1h)")
    return float(match.group(1)) * _UNIT[match.group(2)]


Seconds = Annotated[float, BeforeValidator(parse_seconds)]


def _never_or_seconds(value: object) -> object:
    return value if value == "never" else parse_seconds(value)


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid",
                              frozen=True)


class ScenarioPodSet(_Model):
    name: str = "main"
    count: int = Field(default=1, ge=0)
    min_count: int | None = Field(default=None, ge=1)
    requests: dict[str, api.RequestQuantity] = Field(default_factory=dict)
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: list[api.Toleration] = Field(default_factory=list)
    #: Pod-template annotations, e.g. kuota.dev/podset-required-topology.
    annotations: dict[str, str] = Field(default_factory=dict)


class ScenarioNode(_Model):
    """A node of a topology-aware flavor; it carries the flavor's nodeLabels too."""

    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    allocatable: dict[str, api.Quantity] = Field(default_factory=dict)


CheckState = Literal["Ready", "Retry", "Rejected"]


class ScriptedCheck(_Model):
    """Scripted admission-check verdicts, ``after`` seconds after each quota reservation:
    ``states[n]`` answers the n-th reservation (the last one repeats)."""

    name: str
    states: list[CheckState] = Field(default_factory=lambda: list[CheckState](["Ready"]),
                                     min_length=1)
    after: Seconds = 0.0

    def state_for(self, attempt: int) -> str:
        return self.states[min(attempt, len(self.states) - 1)]


class ScenarioWorkload(_Model):
    name: str
    namespace: str = "default"
    queue_name: str
    arrival: Seconds = 0.0
    duration: Seconds = 0.0
    priority: int | None = None
    priority_class_name: str | None = None
    pod_sets: list[ScenarioPodSet] = Field(min_length=1)
    #: Seconds after admission when all pods are ready; "never" = never.
    pods_ready_after: Annotated[float | Literal["never"] | None,
                                BeforeValidator(_never_or_seconds)] = None
    admission_checks: list[ScriptedCheck] = Field(default_factory=list)
    #: Workload (Job) annotations, e.g. kuota.dev/cluster-selector for multi-cluster dispatch.
    annotations: dict[str, str] = Field(default_factory=dict)
    #: The Workload's ``spec.maximumExecutionTimeSeconds``: deactivated once admitted this long.
    maximum_execution_time_seconds: int | None = Field(default=None, ge=1)
    #: The Workload's ``spec.preemptionGates`` (names), closed for the whole run.
    preemption_gates: list[str] = Field(default_factory=list, max_length=8)


class RequeuingStrategyModel(_Model):
    timestamp: Literal["Eviction", "Creation"] = "Eviction"
    backoff_limit_count: int | None = Field(default=None, ge=0)
    backoff_base_seconds: Seconds = 60.0
    backoff_max_seconds: Seconds = 3600.0


class WaitForPodsReady(_Model):
    enable: bool = True
    timeout: Seconds = 300.0
    block_admission: bool = False
    requeuing_strategy: RequeuingStrategyModel = Field(default_factory=RequeuingStrategyModel)


class FairSharingConfig(_Model):
    enable: bool = False


class DeploymentConfig(_Model):
    """The settings a deployment makes once (Kueue's Configuration)."""

    fair_sharing: FairSharingConfig = Field(default_factory=FairSharingConfig)
    wait_for_pods_ready: WaitForPodsReady | None = None


class ScenarioError(ValueError):
    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


ConfigObject = (FlavorConfig | ClusterQueueConfig | CohortConfig | LocalQueueConfig
                | AdmissionCheckConfig)


class Scenario(BaseModel):
    """A loaded, validated scenario."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    source: str
    config: DeploymentConfig
    objects: list[Any]
    namespaces: dict[str, dict[str, str]]
    priority_classes: dict[str, int]
    workloads: list[ScenarioWorkload]
    #: Nodes of topology-aware flavors, by flavor.
    nodes: dict[str, list[ScenarioNode]] = Field(default_factory=dict)
    #: Nodes of MemberClusters (their ``nodes:`` key), by member name.
    member_nodes: dict[str, list[ScenarioNode]] = Field(default_factory=dict)
    expect: dict[str, Any] | None = None

    def engine_config(self) -> EngineConfig:
        ready = self.config.wait_for_pods_ready
        pods_ready = None
        if ready is not None and ready.enable:
            rs = ready.requeuing_strategy
            pods_ready = PodsReadyConfig(
                timeout=ready.timeout, block_admission=ready.block_admission,
                requeuing=RequeuingStrategy(rs.timestamp, rs.backoff_limit_count,
                                            rs.backoff_base_seconds, rs.backoff_max_seconds))
        return EngineConfig(fair_sharing=self.config.fair_sharing.enable,
                            wait_for_pods_ready=pods_ready)

    def topologies(self) -> list[Topology]:
        return [from_object(o) for o in self.objects if isinstance(o, api.Topology)]

    def topology_nodes(self) -> list[Node]:
        """The scenario's nodes, labelled with their flavor's nodeLabels."""
        labels = {o.metadata.name: dict(o.spec.node_labels) for o in self.objects
                  if isinstance(o, api.ResourceFlavor)}
        return [Node(n.name, {r: parse_amount(q) for r, q in n.allocatable.items()},
                     labels={**labels.get(flavor, {}), **n.labels})
                for flavor, nodes in self.nodes.items() for n in nodes]

    def configs(self) -> list[ConfigObject]:
        """Queue objects as core configs (ResourceFlavors first, as a cluster would have them)."""
        order: dict[type, int] = {api.ResourceFlavor: 0, api.AdmissionCheck: 1, api.Cohort: 2,
                                  api.ClusterQueue: 3, api.LocalQueue: 4}
        queue_objects = [o for o in self.objects if type(o) in order]
        queue_objects.sort(key=lambda o: order[type(o)])
        return [convert.config(o) for o in queue_objects]


def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    try:
        doc = yaml_input.safe_load(yaml_input.read_file(path))
    except OSError as exc:
        raise ScenarioError([Problem(str(path), "Scenario", path.name, "", str(exc))]) from exc
    except yaml.YAMLError as exc:
        raise ScenarioError([Problem(str(path), "Scenario", path.name, "", f"not YAML: {exc}")]
                            ) from exc
    except yaml_input.InputLimitError as exc:
        raise ScenarioError([Problem(str(path), "Scenario", path.name, "", str(exc))]) from None
    return parse_scenario(doc, source=str(path))


def parse_scenario(doc: object, *, source: str) -> Scenario:
    if not isinstance(doc, Mapping):
        raise ScenarioError([Problem(source, "Scenario", "", "", "must be a mapping with "
                                     "objects: and workloads:")])
    problems: list[Problem] = []
    unknown = set(doc) - {"config", "objects", "workloads", "expect", "nodes"}
    for key in sorted(unknown):
        problems.append(Problem(source, "Scenario", "", str(key), "unknown top-level key"))
    config = DeploymentConfig()
    try:
        config = DeploymentConfig.model_validate(doc.get("config") or {})
    except ValidationError as exc:
        problems += _problems(exc, source, "Scenario", "config", "config")
    objects: list[Any] = []
    namespaces: dict[str, dict[str, str]] = {}
    member_nodes: dict[str, list[ScenarioNode]] = {}
    for i, raw in enumerate(doc.get("objects") or []):
        if isinstance(raw, Mapping) and raw.get("kind") == "Namespace":
            meta = raw.get("metadata") or {}
            if not isinstance(meta, Mapping) or not meta.get("name"):
                problems.append(Problem(source, "Namespace", "", f"objects[{i}].metadata.name",
                                        "is required"))
                continue
            namespaces[str(meta["name"])] = {str(k): str(v)
                                             for k, v in (meta.get("labels") or {}).items()}
            continue
        if isinstance(raw, Mapping) and raw.get("kind") == "MemberCluster" and "nodes" in raw:
            raw = dict(raw)
            problems += _member_nodes(raw.pop("nodes"), raw, source, i, member_nodes)
        try:
            objects.append(api.parse_object(raw, source=f"{source}: objects[{i}]"))
        except api.ObjectError as exc:
            problems += exc.problems
    priority_classes = {o.metadata.name: o.value for o in objects
                        if isinstance(o, api.WorkloadPriorityClass)}
    workloads: list[ScenarioWorkload] = []
    seen: set[str] = set()
    for i, raw in enumerate(doc.get("workloads") or []):
        name = raw.get("name", "") if isinstance(raw, Mapping) else ""
        try:
            wl = ScenarioWorkload.model_validate(raw)
        except ValidationError as exc:
            problems += _problems(exc, source, "Workload", str(name), f"workloads[{i}]")
            continue
        key = f"{wl.namespace}/{wl.name}"
        if key in seen:
            problems.append(Problem(source, "Workload", key, f"workloads[{i}].name",
                                    "duplicate workload"))
        seen.add(key)
        if wl.priority_class_name and wl.priority_class_name not in priority_classes:
            problems.append(Problem(source, "Workload", key, f"workloads[{i}].priorityClassName",
                                    f"WorkloadPriorityClass {wl.priority_class_name} is not "
                                    f"among the objects"))
        try:
            workload_info(wl, priority_classes)
        except (api.ObjectError, ValueError) as exc:
            problems.append(Problem(source, "Workload", key, f"workloads[{i}]", str(exc)))
            continue
        workloads.append(wl)
    nodes: dict[str, list[ScenarioNode]] = {}
    flavor_names = {o.metadata.name for o in objects if isinstance(o, api.ResourceFlavor)}
    for flavor_name, raw_nodes in (doc.get("nodes") or {}).items():
        if flavor_name not in flavor_names:
            problems.append(Problem(source, "Scenario", "", f"nodes.{flavor_name}",
                                    f"ResourceFlavor {flavor_name} is not among the objects"))
            continue
        try:
            nodes[str(flavor_name)] = [ScenarioNode.model_validate(n) for n in raw_nodes or []]
        except ValidationError as exc:
            problems += _problems(exc, source, "Node", "", f"nodes.{flavor_name}")
    expect = doc.get("expect")
    if expect is not None and not isinstance(expect, Mapping):
        problems.append(Problem(source, "Scenario", "", "expect", "must be a mapping"))
    if problems:
        raise ScenarioError(problems)
    return Scenario(source=source, config=config, objects=objects, namespaces=namespaces,
                    priority_classes=priority_classes, workloads=workloads, nodes=nodes,
                    member_nodes=member_nodes, expect=dict(expect) if expect else None)


def _member_nodes(raw_nodes: object, member: Mapping[str, Any], source: str, index: int,
                  into: dict[str, list[ScenarioNode]]) -> list[Problem]:
    """Validate a MemberCluster's ``nodes:`` (simulator only) into ``into[name]``."""
    meta = member.get("metadata")
    name = str(meta.get("name", "")) if isinstance(meta, Mapping) else ""
    where = f"objects[{index}].nodes"
    if not isinstance(raw_nodes, list):
        return [Problem(source, "MemberCluster", name, where, "must be a list of nodes")]
    nodes, problems = [], []
    for j, raw in enumerate(raw_nodes):
        try:
            nodes.append(ScenarioNode.model_validate(raw))
        except ValidationError as exc:
            problems += _problems(exc, source, "MemberCluster", name, f"{where}[{j}]")
    if problems:
        return problems
    names = [n.name for n in nodes]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        return [Problem(source, "MemberCluster", name, where,
                        f"node names must be unique (repeated: {', '.join(repeated)})")]
    if name in into:
        return [Problem(source, "MemberCluster", name, "metadata.name", "duplicate MemberCluster")]
    into[name] = nodes
    return []


def workload_info(wl: ScenarioWorkload, priority_classes: Mapping[str, int]) -> WorkloadInfo:
    """The core's view of a scenario entry, queued by its arrival time."""
    pod_sets = tuple(_pod_set_info(_pod_set_key(ps)) for ps in wl.pod_sets)
    names = [ps.name for ps in pod_sets]
    if len(set(names)) != len(names):
        raise ValueError(f"pod set names must be unique, got {names}")
    return WorkloadInfo(wl.namespace, wl.name, wl.queue_name, pod_sets,
                        priority=_priority(wl, priority_classes), created=wl.arrival,
                        priority_class=wl.priority_class_name,
                        max_execution=wl.maximum_execution_time_seconds,
                        preemption_gated=bool(wl.preemption_gates))


def _priority(wl: ScenarioWorkload, priority_classes: Mapping[str, int]) -> int:
    if wl.priority is not None:
        return wl.priority
    return priority_classes.get(wl.priority_class_name or "", 0)


_PodSetKey = tuple[str, int, int | None, tuple[tuple[str, str], ...],
                   tuple[tuple[str, str], ...], tuple[str, ...], tuple[tuple[str, str], ...]]


def _pod_set_key(ps: ScenarioPodSet) -> _PodSetKey:
    return (ps.name, ps.count, ps.min_count, tuple(sorted(ps.requests.items())),
            tuple(sorted(ps.node_selector.items())),
            tuple(t.model_dump_json() for t in ps.tolerations),
            tuple(sorted(ps.annotations.items())))


@functools.lru_cache(maxsize=4096)
def _pod_set_info(key: _PodSetKey) -> PodSetInfo:
    # Scenarios repeat a few shapes thousands of times: build each through the
    # real Workload model once (same validation and request arithmetic as a
    # Workload object from the API), then share the immutable result.
    name, count, min_count, requests, node_selector, tolerations, annotations = key
    ps = api.PodSet.from_requests(
        name, count, dict(requests), min_count=min_count, node_selector=dict(node_selector),
        tolerations=tuple(api.Toleration.model_validate_json(t) for t in tolerations))
    info = convert.pod_set(ps)
    topology = convert.topology_request(dict(annotations))
    return dataclasses.replace(info, topology=topology) if topology else info


def to_workload(wl: ScenarioWorkload, priority_classes: Mapping[str, int]) -> api.Workload:
    """The Workload object a scenario entry stands for."""
    pod_sets = [api.PodSet.from_requests(
        ps.name, ps.count, ps.requests, min_count=ps.min_count, node_selector=ps.node_selector,
        tolerations=ps.tolerations) for ps in wl.pod_sets]
    priority = _priority(wl, priority_classes)
    return api.Workload.model_validate({
        "apiVersion": "kuota.dev/v1alpha1", "kind": "Workload",
        "metadata": {"name": wl.name, "namespace": wl.namespace},
        "spec": {"queueName": wl.queue_name, "podSets": pod_sets, "priority": priority,
                 "priorityClassRef": (api.PriorityClassRef.workload(wl.priority_class_name)
                                      if wl.priority_class_name else None)},
    })


def _problems(exc: ValidationError, source: str, kind: str, name: str,
              prefix: str) -> list[Problem]:
    out = []
    for err in exc.errors():
        path = ".".join(str(p) for p in err["loc"])
        out.append(Problem(source, kind, name, f"{prefix}.{path}" if path else prefix,
                           err["msg"]))
    return out
