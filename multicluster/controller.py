"""The dispatcher: the ``kuota.dev/multicluster`` admission check, as an engine controller.

A ClusterQueue opts in to multi-cluster dispatch by listing an AdmissionCheck
whose ``controllerName`` is ``kuota.dev/multicluster`` and whose parameters
name a MultiClusterConfig. When a workload reserves quota there, the engine
calls :meth:`Dispatcher.reserved` (the :class:`admission.engine.CheckController`
protocol). The dispatcher runs :func:`multicluster.decision.select` over the
member values it holds and then:

* **a member is chosen** — it places the gang on that member's nodes (the
  same greedy fills the capacity estimate uses, then the gang placer) and
  keeps the member value with those pods counted
  (:meth:`ClusterInfo.with_usage`), so the next decision sees the member
  fuller; it tells the engine the cluster (``assign``, which is
  :meth:`admission.engine.Engine.assign_cluster`, so the ADMITTED event
  carries it) and answers Ready with :func:`multicluster.explain.summary`;
* **nothing fits** — it answers Pending with the summary (the workload keeps
  its quota, as under Kueue's MultiKueue) and remembers the workload;
  :meth:`Dispatcher.poll` — called by adapters when capacity changes or
  periodically — tries the waiting ones again, oldest first, and returns the
  verdicts to apply with :meth:`Engine.set_check`.

A malformed hint annotation is a Rejected verdict (it cannot get better by
waiting), and so is a workload the adapter says it cannot carry out at all
(``refuse``: the operator refuses a Job the manager's Job controller would
fight over, see :mod:`kuota.federation.managed_by`); a missing
MultiClusterConfig or an unknown flavor keeps the check Pending until the
configuration arrives.

When a dispatched workload finishes or is evicted, the engine's outbox
consumer calls :meth:`Dispatcher.released`, which takes its pods off the
member's nodes again. Usage recorded here is the dispatcher's own estimate;
adapters that observe the members' real nodes replace a member wholesale with
:meth:`Dispatcher.set_member`.

A new dispatcher (a restarted or new leader) knows nothing of the workloads a
previous one sent out. The adapter hands them over with :meth:`Dispatcher.adopt`
— the member and what the workload's pods are observed to request on each
node — so they count on their member like its own dispatches and
:meth:`Dispatcher.released` frees them when they end. :meth:`Dispatcher.exclude`
keeps a member out of a workload's later decisions (the member refused to run
it), until :meth:`Dispatcher.forget`.

Every decision is kept as :meth:`Decision.to_dict` values per workload, for
the Workload's status and ``kuota why``. The class holds state but does no
I/O and reads no clock: ``now`` is passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from admission.engine import PENDING, READY, REJECTED, Record
from multicluster import capacity, explain
from multicluster.decision import Decision, select
from multicluster.framework import Registry
from multicluster.hints import HintError, hints_from_annotations
from multicluster.model import ClusterInfo
from multicluster.request import DispatchRequest, RequestError, build_request
from multicluster.settings import DispatchConfig, dispatch_config
from placement.gang import GangUnplaceable
from placement.model import Node
from quota.api.multiclusterconfig import MultiClusterConfig
from quota.config import AdmissionCheckConfig, FlavorConfig
from quota.lifecycle import State
from quota.resources import Amount
from quota.workload import Admission, WorkloadInfo

CONTROLLER_NAME: Final = "kuota.dev/multicluster"
CONFIG_KIND: Final = "MultiClusterConfig"


@dataclass(frozen=True, slots=True)
class Verdict:
    """An admission-check state to apply with ``Engine.set_check``."""

    key: str
    check: str
    state: str
    message: str


@dataclass(frozen=True, slots=True)
class Dispatch:
    """Where a workload went, and what its pods added to each node there (for release)."""

    cluster: str
    added: Mapping[str, Mapping[str, Amount]]


@dataclass(slots=True)
class _Waiting:
    record: Record
    check: AdmissionCheckConfig
    #: The admission the check was asked about; a different one means a new attempt.
    admission: Admission
    message: str


def _no_annotations(info: WorkloadInfo) -> Mapping[str, str]:
    return {}


def _no_refusal(info: WorkloadInfo) -> str | None:
    return None


class Dispatcher:
    """Runs ``kuota.dev/multicluster`` admission checks; see the module docstring."""

    def __init__(self, *, flavors: Callable[[], Mapping[str, FlavorConfig]],
                 assign: Callable[[str, str], None] | None = None,
                 annotations: Callable[[WorkloadInfo], Mapping[str, str]] = _no_annotations,
                 registry: Registry | None = None,
                 refuse: Callable[[WorkloadInfo], str | None] = _no_refusal) -> None:
        self._flavors = flavors
        self._assign = assign
        self._annotations = annotations
        #: Why the adapter cannot dispatch a workload at all (None: it can).
        self._refuse = refuse
        self._registry = registry
        self.configs: dict[str, DispatchConfig] = {}
        self.members: dict[str, ClusterInfo] = {}
        #: Workload key -> where it runs, while dispatched.
        self.dispatched: dict[str, Dispatch] = {}
        #: Workload key -> the latest decision (``Decision.to_dict``), kept after release,
        #: until :meth:`forget`.
        self.decisions: dict[str, dict[str, Any]] = {}
        #: Workload key -> members it must not go to, and why (see :meth:`exclude`).
        self.excluded: dict[str, dict[str, str]] = {}
        self._waiting: dict[str, _Waiting] = {}

    # -- inputs from adapters -------------------------------------------------
    def set_config(self, obj: MultiClusterConfig) -> None:
        """Add or replace a MultiClusterConfig (SettingsError if it names unknown plugins)."""
        self.configs[obj.metadata.name] = dispatch_config(obj, self._registry)

    def delete_config(self, name: str) -> None:
        self.configs.pop(name, None)

    def set_member(self, member: ClusterInfo) -> None:
        """A member as observed (its nodes' usage included): replaces what was known."""
        self.members[member.name] = member

    def delete_member(self, name: str) -> None:
        self.members.pop(name, None)

    def seen(self, name: str, now: float) -> None:
        """The member answered at ``now``: refresh its last-seen time, keeping its memos
        (they depend on the nodes, not on health)."""
        old = self.members[name]
        fresh = replace(old, health=replace(old.health, last_seen=now))
        object.__setattr__(fresh, "layout", old.layout)
        fresh.memo.update(old.memo)
        self.members[name] = fresh

    @property
    def waiting(self) -> tuple[str, ...]:
        """Keys of workloads whose check is Pending for want of a member."""
        return tuple(self._waiting)

    def decision(self, key: str) -> Decision | None:
        data = self.decisions.get(key)
        return None if data is None else Decision.from_dict(data)

    # -- the CheckController protocol -----------------------------------------
    def reserved(self, record: Record, check: AdmissionCheckConfig,
                 now: float) -> tuple[str, str] | None:
        key = record.info.key
        self._waiting.pop(key, None)
        if record.admission is None:
            return None
        state, message = self._try(record.info, record.admission, check, now)
        if state == PENDING:
            self._waiting[key] = _Waiting(record, check, record.admission, message)
        return state, message

    def poll(self, now: float) -> list[Verdict]:
        """Try the waiting workloads again, oldest first; the verdicts that changed."""
        verdicts = []
        order = sorted(self._waiting.items(), key=lambda kv: (kv[1].record.info.created, kv[0]))
        for key, waiting in order:
            record = waiting.record
            if (record.state is not State.QUOTA_RESERVED
                    or record.admission is not waiting.admission):
                del self._waiting[key]  # released, evicted or reserved anew meanwhile
                continue
            state, message = self._try(record.info, waiting.admission, waiting.check, now)
            if state != PENDING:
                del self._waiting[key]
            elif message == waiting.message:
                continue
            waiting.message = message
            verdicts.append(Verdict(key, waiting.check.name, state, message))
        return verdicts

    def adopt(self, key: str, cluster: str, added: Mapping[str, Mapping[str, Amount]]) -> None:
        """A workload dispatched to ``cluster`` before this dispatcher existed: count what
        its pods request per node (``added``: node -> amounts) as if it had placed it.

        Adopting again replaces the earlier amounts (pods appear, move or finish while the
        workload runs). Nodes the member does not have (any more) are left out.
        """
        self._waiting.pop(key, None)
        self.released(key)
        kept = {node: dict(amounts) for node, amounts in added.items() if amounts}
        self.dispatched[key] = Dispatch(cluster, kept)
        member = self.members.get(cluster)
        if member is None:
            return
        present = {node.name: node for node in member.nodes}
        grown = [present[name].with_requested(amounts) for name, amounts in kept.items()
                 if name in present]
        if grown:
            self.members[cluster] = member.with_usage(grown)

    def exclude(self, key: str, cluster: str, reason: str) -> None:
        """Keep ``cluster`` out of the workload's decisions from now on (shown as
        ``Excluded`` with ``reason``), until :meth:`forget`."""
        self.excluded.setdefault(key, {})[cluster] = reason

    def forget(self, key: str) -> None:
        """The workload is gone for good (finished or deleted): drop what is kept of it,
        its decision too (the adapter has written it to the workload's status by then)."""
        self.released(key)
        self.excluded.pop(key, None)
        self.decisions.pop(key, None)

    def released(self, key: str) -> None:
        """The workload finished, was evicted or deleted: free what it held on its member."""
        self._waiting.pop(key, None)
        dispatch = self.dispatched.pop(key, None)
        if dispatch is None:
            return
        member = self.members.get(dispatch.cluster)
        if member is None:
            return
        present = {node.name: node for node in member.nodes}
        freed = [_without(present[name], added) for name, added in dispatch.added.items()
                 if name in present]
        if freed:
            self.members[member.name] = member.with_usage(freed)

    # -- internals -------------------------------------------------------------
    def _try(self, info: WorkloadInfo, admission: Admission, check: AdmissionCheckConfig,
             now: float) -> tuple[str, str]:
        where = f"AdmissionCheck {check.name}"
        kind, name = check.parameters.get("kind", CONFIG_KIND), check.parameters.get("name")
        if kind != CONFIG_KIND or not name:
            return REJECTED, (f"{where}: spec.parameters must name a {CONFIG_KIND} "
                              f"(got kind {kind!r}, name {name!r})")
        refusal = self._refuse(info)
        if refusal is not None:
            return REJECTED, refusal
        config = self.configs.get(name)
        if config is None:
            return PENDING, f"{where}: {CONFIG_KIND} {name} is not known (yet)"
        try:
            hints = hints_from_annotations(self._annotations(info))
        except HintError as exc:
            return REJECTED, f"workload {info.key}: {exc}"
        flavors = self._flavors()
        try:
            request = build_request(info, admission, flavors=flavors, hints=hints, now=now,
                                    stale_after=config.stale_after)
        except RequestError as exc:
            return PENDING, str(exc)
        decision = select(info, admission, self.members.values(), config, now=now,
                          flavors=flavors, hints=hints, exclude=self.excluded.get(info.key))
        self.decisions[info.key] = decision.to_dict()
        summary = explain.summary(decision)
        if decision.cluster is None:
            return PENDING, summary
        self._record(info.key, request, self.members[decision.cluster])
        if self._assign is not None:
            self._assign(info.key, decision.cluster)
        return READY, summary

    def _record(self, key: str, request: DispatchRequest, member: ClusterInfo) -> None:
        before = {node.name: node for node in member.nodes}
        placed = placement(request, member) or {}
        added = {name: _difference(node.requested, before[name].requested)
                 for name, node in placed.items()}
        self.dispatched[key] = Dispatch(member.name, added)
        if placed:
            self.members[member.name] = member.with_usage(placed.values())


def placement(request: DispatchRequest, member: ClusterInfo) -> dict[str, Node] | None:
    """The member's nodes that take the gang, with its pods added; None if it does not fit.

    First fit, then best fit, then the gang placer pod by pod — the order the capacity
    estimate tries them, so a member it accepted gets a placement here.
    """
    if not request.groups or request.pod_count == 0:
        return {}
    placed = capacity.fill(request, member, tightest=False)
    if placed is None:
        placed = capacity.fill(request, member, tightest=True)
    if placed is not None:
        return placed
    result = capacity.place(request, member)
    return None if isinstance(result, GangUnplaceable) else result.nodes


def _difference(after: Mapping[str, Amount], before: Mapping[str, Amount]) -> dict[str, Amount]:
    return {r: after[r] - before.get(r, 0) for r in after if after[r] != before.get(r, 0)}


def _without(node: Node, added: Mapping[str, Amount]) -> Node:
    requested = {r: max(0, v - added.get(r, 0)) for r, v in node.requested.items()}
    return replace(node, requested=requested)
