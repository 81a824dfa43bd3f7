"""What the dashboard shows, as values: computed from an engine and per-workload facts.

Both stores end in the same place. Redis mode rebuilds an
:class:`~admission.engine.Engine` from the store exactly as a new leader
would (:func:`kuota.service.rebuild.load`); Kubernetes mode rebuilds one from
the CRD objects as the operator does when it starts leading
(:mod:`kuota.dashboard.kube`). :func:`overview` then reads that engine — its
quota tree, its pending queues in admission order, the workloads holding
quota — so every number on a page is the engine's own, never a second
implementation of the quota rules. What only the leader knows (why a workload
waits, where its pods run) comes in as :class:`Facts`, one per workload, read
by the adapter from the Redis record or the Workload object's status.

Numbers per flavor and resource (a :class:`Cell`), in milli-units:

* **nominal** — the node's own quota (for a Cohort: everything its subtree
  brings, its own cells plus its members');
* **used** — what the workloads holding quota take (for a Cohort: its members' sum);
* **borrowed** — used beyond nominal, taken from the cohort;
* **lent** — the part of this node's unused nominal that borrowers in the same
  cohort tree are using. The engine does not record who lends to whom (Kueue
  does not either): what the borrowers of a tree take beyond their own quota is
  spread over the nodes with unused quota in proportion to what each could
  lend (capped by its lendingLimit).

Everything here is frozen and comparable: the server compares two overviews to
decide whether the pages changed (and only then tells browsers to refresh).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from admission.engine import Engine
from kuota import explanation
from kuota.explanation import WorkloadView
from quota.lifecycle import State
from quota.resources import FlavorResource, format_amount
from quota.tree import QuotaNode

#: Holding states shown as "admitted" (Kueue's admittedWorkloads counts these).
ADMITTED_STATES = frozenset({State.ADMITTED, State.EVICTING})


@dataclass(frozen=True)
class Cell:
    flavor: str
    resource: str
    nominal: int
    used: int
    borrowed: int = 0
    lent: int = 0
    borrowing_limit: int | None = None
    lending_limit: int | None = None

    @property
    def scale(self) -> int:
        """The amount a full bar stands for: the most this node could hold."""
        top = self.nominal + (self.borrowing_limit or 0)
        return max(top, self.used, self.nominal, 1)

    def percent(self, amount: int) -> float:
        return round(100.0 * amount / self.scale, 2)

    def text(self, amount: int | None) -> str:
        return "∞" if amount is None else format_amount(amount, self.resource)


@dataclass(frozen=True)
class Counts:
    pending: int = 0
    #: Holding quota (QuotaReserved or Admitted), as Kueue's reservingWorkloads.
    reserving: int = 0
    admitted: int = 0


@dataclass(frozen=True)
class TreeNode:
    name: str
    kind: str  # Cohort | ClusterQueue
    cells: tuple[Cell, ...]
    counts: Counts
    children: tuple[TreeNode, ...] = ()
    active: bool = True
    message: str = ""


@dataclass(frozen=True)
class LocalQueueRow:
    key: str
    cluster_queue: str
    counts: Counts


@dataclass(frozen=True)
class PendingRow:
    key: str
    cluster_queue: str
    #: 0-based, as ``kuota pending`` and Kueue's visibility API.
    position: int
    local_queue: str
    local_position: int
    priority: int
    reason: str
    message: str
    #: Set aside: it can never fit as configured, so it blocks no one (listed last).
    inadmissible: bool = False

    @property
    def waits_because(self) -> str:
        """The same words ``kuota why`` uses for a pending workload."""
        return ": ".join(p for p in (self.reason, self.message) if p) or "not tried yet"


@dataclass(frozen=True)
class InactiveRow:
    """A deactivated workload: it holds nothing and is not queued until activated again."""

    key: str
    cluster_queue: str
    local_queue: str
    reason: str
    message: str


@dataclass(frozen=True)
class RunningRow:
    key: str
    cluster_queue: str
    local_queue: str
    state: str
    flavors: str
    cluster: str
    nodes: tuple[str, ...]
    since: float


@dataclass(frozen=True)
class Member:
    """A member cluster (Kubernetes) or worker pool (Redis): where admitted work runs."""

    name: str
    healthy: bool
    health: str
    nodes_ready: int | None = None
    nodes: int | None = None
    #: resource -> (free, total), as text.
    resources: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True)
class Facts:
    """What the adapter read about one workload besides the engine's state."""

    view: WorkloadView
    nodes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Overview:
    source: str
    roots: tuple[TreeNode, ...]
    local_queues: tuple[LocalQueueRow, ...]
    #: ClusterQueue -> its pending workloads in admission order.
    pending: Mapping[str, tuple[PendingRow, ...]]
    running: tuple[RunningRow, ...]
    members: tuple[Member, ...] = ()
    problems: tuple[str, ...] = ()
    #: Deactivated workloads (Inactive), which wait for nothing until activated again.
    inactive: tuple[InactiveRow, ...] = ()
    #: The engine the overview was read from: a workload's explanation reads it too.
    engine: Engine | None = field(default=None, compare=False, repr=False)

    def cluster_queue(self, name: str) -> TreeNode | None:
        return next((n for n in walk(self.roots) if n.kind == "ClusterQueue"
                     and n.name == name), None)

    def totals(self) -> Counts:
        queues = [n.counts for n in walk(self.roots) if n.kind == "ClusterQueue"]
        return Counts(sum(c.pending for c in queues), sum(c.reserving for c in queues),
                      sum(c.admitted for c in queues))

    def pending_in_order(self) -> list[PendingRow]:
        """Every pending workload: by ClusterQueue, then position."""
        return [row for name in sorted(self.pending) for row in self.pending[name]]


@dataclass(frozen=True)
class HistoryRow:
    at: float | None
    event: str
    detail: str


@dataclass(frozen=True)
class WorkloadPage:
    facts: Facts
    why: str
    position: PendingRow | None = None
    running: RunningRow | None = None
    history: tuple[HistoryRow, ...] = ()
    conditions: tuple[tuple[str, str, str, str], ...] = field(default_factory=tuple)
    #: Redis mode: where its pods' output is read (the page links it); None on Kubernetes.
    logs_url: str | None = None
    #: The engine the explanation was read from (None: the stored state stood in for it).
    engine: Engine | None = field(default=None, compare=False, repr=False)


def walk(nodes: Iterable[TreeNode]) -> Iterable[TreeNode]:
    for node in nodes:
        yield node
        yield from walk(node.children)


# -- building ---------------------------------------------------------------------------------

def overview(engine: Engine, facts: Mapping[str, Facts], *, source: str,
             members: Sequence[Member] = (), problems: Sequence[str] = (),
             previous: Overview | None = None,
             changed: Collection[str] | None = None) -> Overview:
    """The overview of ``engine``. With ``previous`` and ``changed`` (the ClusterQueues
    whose waiting workloads or their facts changed since ``previous`` was built), the
    pending lists of the other ClusterQueues are taken from ``previous``: on a large
    store they are most of the work, and one admission touches one queue."""
    cache = engine.cache
    pending: dict[str, tuple[PendingRow, ...]] = {}
    by_lq: dict[str, list[int]] = {}
    for name in sorted(cache.cluster_queues):
        kept = previous.pending.get(name) if previous is not None and changed is not None \
            and name not in changed else None
        pending[name] = kept if kept is not None else _pending_rows(engine, facts, name)
        for row in pending[name]:
            by_lq.setdefault(row.local_queue, [0, 0, 0])[0] += 1
    running = []
    held: dict[str, list[int]] = {}
    for entry in cache.all_holding():
        key = entry.info.key
        record = engine.records.get(key)
        state = record.state if record is not None else State.ADMITTED
        admission = entry.admission
        lq = entry.info.local_queue_key
        admitted = state in ADMITTED_STATES
        cq_held = held.setdefault(admission.cluster_queue, [0, 0])
        cq_held[0] += 1
        cq_held[1] += admitted
        lq_counts = by_lq.setdefault(lq, [0, 0, 0])
        lq_counts[1] += 1
        lq_counts[2] += admitted
        fact = facts.get(key)
        running.append(RunningRow(
            key, admission.cluster_queue, lq, state.value, flavors_text(admission.pod_sets),
            admission.cluster or (fact.view.cluster if fact and fact.view.cluster else "") or "",
            (fact.nodes if fact else ()) or _assigned_nodes(admission.pod_sets), entry.at))
    running.sort(key=lambda r: (r.cluster_queue, r.since, r.key))
    counts = {name: Counts(len(pending.get(name, ())), *held.get(name, [0, 0]))
              for name in cache.cluster_queues}
    roots = _tree(engine, counts)
    local_queues = tuple(
        LocalQueueRow(key, lq.cluster_queue, Counts(*by_lq.get(key, [0, 0, 0])))
        for key, lq in sorted(cache.local_queues.items()))
    inactive = tuple(
        InactiveRow(key, _route(engine, record.info.local_queue_key),
                    record.info.local_queue_key, record.pending_reason or "Inactive",
                    record.pending_message or "")
        for key, record in sorted(engine.records.items()) if record.state is State.INACTIVE)
    return Overview(source, roots, local_queues, pending, tuple(running), tuple(members),
                    tuple(problems), inactive, engine)


def _route(engine: Engine, local_queue: str) -> str:
    lq = engine.cache.local_queues.get(local_queue)
    return lq.cluster_queue if lq is not None else ""


def _pending_rows(engine: Engine, facts: Mapping[str, Facts],
                  name: str) -> tuple[PendingRow, ...]:
    rows = []
    for info, position, local_position in engine.queues.positions(name):
        view = facts[info.key].view if info.key in facts else None
        aside = engine.queues.set_aside(info.key)
        # The leader's published reason; the engine's own when it sets the workload aside.
        reason, message = aside if aside is not None else (
            (view.reason, view.message) if view else ("", ""))
        rows.append(PendingRow(info.key, name, position, info.local_queue_key, local_position,
                               info.priority, reason, message, aside is not None))
    return tuple(rows)


def _assigned_nodes(pod_sets: Iterable[object]) -> tuple[str, ...]:
    """Nodes a topology-aware admission assigned (when no placement was recorded)."""
    return tuple(dict.fromkeys(node for ps in pod_sets for node, _ in getattr(ps, "nodes", ())))


def flavors_text(pod_sets: Iterable[object]) -> str:
    parts = []
    for ps in pod_sets:
        flavors = dict.fromkeys(getattr(ps, "flavors", {}).values())
        parts.append(f"{getattr(ps, 'name', '')}×{getattr(ps, 'count', 0)}: "
                     + ", ".join(flavors))
    return "; ".join(parts)


def _tree(engine: Engine, counts: Mapping[str, Counts]) -> tuple[TreeNode, ...]:
    tree = engine.cache.tree
    lent = _lent(tree.queues.values(), tree.cohorts.values())
    inactive = engine.cache.inactive

    def build(node: QuotaNode) -> TreeNode:
        children = tuple(build(c) for c in sorted(node.children, key=lambda c: (
            not c.is_cohort, c.name)))
        if node.is_cohort:
            cells = _cohort_cells(node, children, lent)
            total = Counts(*(sum(getattr(c.counts, f) for c in children)
                             for f in ("pending", "reserving", "admitted")))
            return TreeNode(node.name, "Cohort", cells, total, children)
        off = inactive.get(node.name)
        return TreeNode(node.name, "ClusterQueue", _queue_cells(node, lent),
                        counts.get(node.name, Counts()), (), off is None,
                        f"{off.reason}: {off.message}" if off is not None else "")

    # ClusterQueues the tree left out (a cohort loop) are still shown, flat.
    roots = [n for n in [*tree.cohorts.values(), *tree.queues.values()] if n.parent is None]
    known = {n.name for n in tree.queues.values()}
    out = [build(n) for n in sorted(roots, key=lambda n: (not n.is_cohort, n.name))]
    for name in sorted(set(engine.cache.cluster_queues) - known):
        off = inactive.get(name)
        out.append(TreeNode(name, "ClusterQueue", (), counts.get(name, Counts()), (),
                            off is None, f"{off.reason}: {off.message}" if off else ""))
    return tuple(out)


def _queue_cells(node: QuotaNode, lent: Mapping[tuple[str, FlavorResource], int]
                 ) -> tuple[Cell, ...]:
    cells = []
    for fr in sorted(node.quotas):
        quota = node.quotas[fr]
        used = node.usage.get(fr, 0)
        cells.append(Cell(fr.flavor, fr.resource, quota.nominal, used,
                          max(0, used - quota.nominal), lent.get((node.name, fr), 0),
                          quota.borrowing_limit, quota.lending_limit))
    return tuple(cells)


def _cohort_cells(node: QuotaNode, children: Sequence[TreeNode],
                  lent: Mapping[tuple[str, FlavorResource], int]) -> tuple[Cell, ...]:
    used: dict[FlavorResource, int] = {}
    for child in children:
        for c in child.cells:
            fr = FlavorResource(c.flavor, c.resource)
            used[fr] = used.get(fr, 0) + c.used
    cells = []
    for fr in sorted(set(node.subtree) | set(used)):
        nominal = node.subtree.get(fr, 0)
        quota = node.quotas.get(fr)
        amount = used.get(fr, 0)
        cells.append(Cell(fr.flavor, fr.resource, nominal, amount, max(0, amount - nominal),
                          lent.get((node.name, fr), 0),
                          quota.borrowing_limit if quota else None,
                          quota.lending_limit if quota else None))
    return tuple(cells)


def _lent(queues: Iterable[QuotaNode], cohorts: Iterable[QuotaNode]
          ) -> dict[tuple[str, FlavorResource], int]:
    """Per (node, cell): its share of what borrowers of its tree use beyond their quota."""
    demand: dict[tuple[str, FlavorResource], int] = {}
    spare: dict[tuple[str, FlavorResource], list[tuple[str, int]]] = {}
    for node in queues:
        if node.parent is None:
            continue
        root = node.root().name
        for fr, quota in node.quotas.items():
            used = node.usage.get(fr, 0)
            demand[(root, fr)] = demand.get((root, fr), 0) + max(0, used - quota.nominal)
            free = max(0, quota.nominal - used)
            if quota.lending_limit is not None:
                free = min(free, quota.lending_limit)
            if free:
                spare.setdefault((root, fr), []).append((node.name, free))
    for cohort in cohorts:
        root = cohort.root().name
        for fr, quota in cohort.quotas.items():
            if quota.nominal:
                spare.setdefault((root, fr), []).append((cohort.name, quota.nominal))
    out: dict[tuple[str, FlavorResource], int] = {}
    for (root, fr), lenders in spare.items():
        wanted = demand.get((root, fr), 0)
        total = sum(free for _, free in lenders)
        if not wanted or not total:
            continue
        for name, free in lenders:
            out[(name, fr)] = min(free, wanted * free // total)
    return out


def workload_page(facts: Facts, overview: Overview | None,
                  history: Sequence[HistoryRow] = (),
                  conditions: Sequence[tuple[str, str, str, str]] = (), *,
                  logs_url: str | None = None) -> WorkloadPage:
    """One workload: its facts, its explanation (as ``kuota why``, from the overview's
    engine), where it waits or runs (from the overview), its history."""
    key = facts.view.key
    engine = overview.engine if overview is not None else None
    routed = explanation.cluster_queue(facts.view, engine)
    if routed != facts.view.cluster_queue:  # waiting: the ClusterQueue it waits in
        facts = replace(facts, view=replace(facts.view, cluster_queue=routed))
    try:
        why = explanation.why(facts.view, engine)
    except ValueError as exc:  # a malformed stored decision: say so, show the rest
        why = f"unreadable dispatch decision: {exc}"
    position = running = None
    if overview is not None:
        for rows in overview.pending.values():
            position = next((r for r in rows if r.key == key), None)
            if position is not None:
                break
        running = next((r for r in overview.running if r.key == key), None)
    return WorkloadPage(facts, why, position, running, tuple(history), tuple(conditions),
                        logs_url, engine)


def history_rows(entries: Iterable[Mapping[str, object]]) -> tuple[HistoryRow, ...]:
    """Redis history entries (``{"at", "event", ...}``) as rows; other fields as k=v."""
    rows = []
    for entry in entries:
        at = entry.get("at")
        detail = ", ".join(f"{k}={_short(v)}" for k, v in entry.items()
                           if k not in ("at", "event") and v not in ("", None, [], {}))
        rows.append(HistoryRow(_timestamp(at), str(entry.get("event", "?")), detail))
    return tuple(rows)


#: 9999-12-31: a later time (from a history line written around kuota) has no date to show.
_LAST_DATE = 253_402_300_799.0


def _timestamp(at: object) -> float | None:
    """A history entry's time, if it is one a date can be shown for."""
    if isinstance(at, bool) or not isinstance(at, int | float):
        return None
    return float(at) if 0 <= at <= _LAST_DATE else None


def _short(value: object) -> str:
    if isinstance(value, list | tuple):
        return " ".join(str(v) for v in value)
    return str(value)
