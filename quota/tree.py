"""The quota tree: Cohorts as inner nodes, ClusterQueues as leaves.

Every node holds, per flavor-resource cell, three numbers:

* ``quota`` — its own ``nominalQuota`` with optional ``borrowingLimit`` and
  ``lendingLimit`` (a Cohort may hold a pool of its own);
* ``subtree`` — the quota of the node plus what its children offer upward;
* ``usage`` — what admitted workloads in the subtree take from this node.

``lendingLimit`` splits a node's subtree quota in two: ``local`` =
``max(0, subtree - lendingLimit)`` is kept for the node's own subtree and
never lent; the rest is offered to the parent. Hence the parent's subtree adds
each child's ``subtree - local``, and the parent's usage adds only the part of
a child's usage that spills out of the child's local part,
``max(0, usage - local)``. Without a lendingLimit, ``local`` is zero and
everything is offered upward.

What a ClusterQueue can still use for a cell is what is free in its local part
plus what its ancestors can still give, where each step up is capped by that
node's ``borrowingLimit`` (how much more than what it stored in the parent it
may take from there). ``potential_available`` is the same computation with
every usage at zero: a request above it can never be admitted, so it is
rejected instead of waiting forever.

The tree holds no workloads, only numbers; :mod:`quota.cache` owns the
workloads and feeds their usage in. A snapshot for one scheduling cycle is a
:meth:`QuotaTree.clone` that copies only the usage dictionaries.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from quota.resources import Amount, FlavorResource, FRVector, Limit


@dataclass(frozen=True, slots=True)
class CellQuota:
    """One cell of a node's own quota."""

    nominal: Amount = 0
    borrowing_limit: Limit = None
    lending_limit: Limit = None


@dataclass(eq=False, slots=True)
class QuotaNode:
    """A Cohort or a ClusterQueue in the tree."""

    name: str
    is_cohort: bool
    quotas: Mapping[FlavorResource, CellQuota]
    parent: QuotaNode | None = None
    children: list[QuotaNode] = field(default_factory=list)
    subtree: FRVector = field(default_factory=dict)
    usage: FRVector = field(default_factory=dict)
    #: The cells that have a lendingLimit (most have none: keep ``local`` cheap).
    lending: Mapping[FlavorResource, Amount] = field(default_factory=dict)
    #: Per cell, the children using more of it than their subtree's quota (kept by
    #: :func:`add_usage` and :func:`remove_usage`): a victim search in a cohort of
    #: hundreds of queues visits only those that borrow.
    borrowers: dict[FlavorResource, dict[QuotaNode, None]] = field(default_factory=dict)
    #: Counts the usage changes made in this node's subtree through :meth:`QuotaTree.add`
    #: and :meth:`QuotaTree.remove`: an answer computed from the subtree's usage holds
    #: while this is unchanged (the fair-sharing tournament keeps its winners so).
    stamp: int = 0
    #: A cohort's height: the longest way down to a leaf (0 without children, 1 with only
    #: ClusterQueues below it, one more per level of cohorts). The tree's shape is fixed
    #: between builds, so it is computed with the subtree quota.
    height: int = 0

    def __post_init__(self) -> None:
        self.lending = _lending(self.quotas)

    def local(self, fr: FlavorResource) -> Amount:
        """The part of the subtree quota kept for this subtree (never lent)."""
        limit = self.lending.get(fr)
        if limit is None:
            return 0
        return max(0, self.subtree.get(fr, 0) - limit)

    def local_available(self, fr: FlavorResource) -> Amount:
        return max(0, self.local(fr) - self.usage.get(fr, 0))

    def ancestors(self) -> Iterator[QuotaNode]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def root(self) -> QuotaNode:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def __repr__(self) -> str:
        kind = "Cohort" if self.is_cohort else "ClusterQueue"
        return f"<{kind} {self.name}>"


def available(node: QuotaNode, fr: FlavorResource) -> Amount:
    """What ``node`` can still use of ``fr`` given current usage (may be negative)."""
    if node.parent is None:
        return node.subtree.get(fr, 0) - node.usage.get(fr, 0)
    from_parent = available(node.parent, fr)
    cell = node.quotas.get(fr)
    if cell is not None and cell.borrowing_limit is not None:
        local = node.local(fr)
        stored_in_parent = node.subtree.get(fr, 0) - local
        used_in_parent = max(0, node.usage.get(fr, 0) - local)
        from_parent = min(from_parent, stored_in_parent - used_in_parent + cell.borrowing_limit)
    return node.local_available(fr) + from_parent


def potential_available(node: QuotaNode, fr: FlavorResource) -> Amount:
    """What ``node`` could use of ``fr`` if nothing else in the tree ran."""
    if node.parent is None:
        return node.subtree.get(fr, 0)
    total = node.local(fr) + potential_available(node.parent, fr)
    cell = node.quotas.get(fr)
    if cell is not None and cell.borrowing_limit is not None:
        total = min(total, node.subtree.get(fr, 0) + cell.borrowing_limit)
    return total


def add_usage(node: QuotaNode, fr: FlavorResource, amount: Amount) -> None:
    """Add usage at ``node``; what does not fit its local part spills to the parent."""
    while amount > 0:
        spill = amount - node.local_available(fr)
        node.usage[fr] = node.usage.get(fr, 0) + amount
        _track(node, fr)
        if node.parent is None or spill <= 0:
            return
        node, amount = node.parent, spill


def remove_usage(node: QuotaNode, fr: FlavorResource, amount: Amount) -> None:
    """Undo :func:`add_usage`: the parent gives back only what had spilled into it."""
    while amount > 0:
        stored_in_parent = node.usage.get(fr, 0) - node.local(fr)
        node.usage[fr] = node.usage.get(fr, 0) - amount
        _track(node, fr)
        if node.parent is None or stored_in_parent <= 0:
            return
        node, amount = node.parent, min(amount, stored_in_parent)


def _stamp(node: QuotaNode | None) -> None:
    """Mark a usage change at ``node`` in the subtrees holding it (every ancestor: what
    spills up stops somewhere, but a mark too many only costs a recomputation)."""
    while node is not None:
        node.stamp += 1
        node = node.parent


def _track(node: QuotaNode, fr: FlavorResource) -> None:
    """Keep ``node`` in its parent's :attr:`~QuotaNode.borrowers` of ``fr`` exactly while
    it uses more of ``fr`` than its subtree's quota."""
    parent = node.parent
    if parent is None:
        return
    members = parent.borrowers.get(fr)
    if node.usage.get(fr, 0) > node.subtree.get(fr, 0):
        if members is None:
            members = parent.borrowers[fr] = {}
        members[node] = None
    elif members:
        members.pop(node, None)


def borrowing_height(node: QuotaNode, fr: FlavorResource, request: Amount) -> int:
    """Kueue's borrowing height of ``request`` more of ``fr``: 0 when the ClusterQueue's own
    quota holds it, else the :attr:`~QuotaNode.height` of the lowest cohort whose subtree
    quota holds it (of the root when none does).

    Walks up until a subtree holds the request within its own quota; each level's free
    local part absorbs some of it on the way. The height is the subtree's, not the number
    of levels climbed: a queue hanging directly under a deep root borrows "from far" even
    one level up, and ranks after a queue whose own small cohort holds its request.
    """
    if node.parent is None or node.usage.get(fr, 0) + request <= node.subtree.get(fr, 0):
        return 0
    remaining = request - node.local_available(fr)
    for ancestor in node.ancestors():
        if ancestor.usage.get(fr, 0) + remaining <= ancestor.subtree.get(fr, 0):
            return ancestor.height
        remaining -= ancestor.local_available(fr)
    return node.root().height


def fits_below_root(node: QuotaNode, fr: FlavorResource, request: Amount) -> bool:
    """Whether ``request`` more of ``fr`` fits within the own quota of some subtree that
    holds ``node`` but is smaller than its whole cohort tree.

    Only then can preempting borrowers reclaim the room: every workload of such a
    subtree that is over its share borrows from it. When only the whole tree holds
    the request, the workload itself borrows and may preempt only as
    ``borrowWithinCohort`` (or fair sharing) allows.
    """
    if node.parent is None:
        return False
    if node.usage.get(fr, 0) + request <= node.subtree.get(fr, 0):
        return True
    remaining = request - node.local_available(fr)
    for ancestor in node.ancestors():
        if ancestor.usage.get(fr, 0) + remaining <= ancestor.subtree.get(fr, 0):
            return ancestor.parent is not None
        remaining -= ancestor.local_available(fr)
    return False


def is_borrowing(node: QuotaNode, fr: FlavorResource) -> bool:
    return node.usage.get(fr, 0) > node.subtree.get(fr, 0)


class CycleError(ValueError):
    """Cohort parents form a loop; the whole loop's tree is disabled."""


@dataclass(eq=False)
class QuotaTree:
    """All nodes by name. Cohorts that nobody declared exist implicitly with no quota."""

    cohorts: dict[str, QuotaNode] = field(default_factory=dict)
    queues: dict[str, QuotaNode] = field(default_factory=dict)
    #: Cohorts inside a parent loop, with the loop spelled out; their trees admit nothing.
    broken: dict[str, str] = field(default_factory=dict)
    _queue_names: dict[str, frozenset[str]] = field(default_factory=dict)
    #: Counts usage changes (:meth:`add`, :meth:`remove`): an answer computed from the
    #: tree holds while it is unchanged.
    version: int = 0

    @classmethod
    def build(
        cls,
        *,
        queues: Mapping[str, tuple[str | None, Mapping[FlavorResource, CellQuota]]],
        cohorts: Mapping[str, tuple[str | None, Mapping[FlavorResource, CellQuota]]],
    ) -> QuotaTree:
        """Link nodes: ``queues``/``cohorts`` map name → (parent cohort, own quota)."""
        tree = cls()
        for name, (_, quotas) in cohorts.items():
            tree.cohorts[name] = QuotaNode(name, True, quotas)
        wanted_parents = {name: parent for name, (parent, _) in cohorts.items()}
        for implied in [p for p, _ in [*cohorts.values(), *queues.values()] if p]:
            if implied not in tree.cohorts:
                tree.cohorts[implied] = QuotaNode(implied, True, {})
                wanted_parents.setdefault(implied, None)
        tree.broken = _find_loops(wanted_parents)
        for name, parent in wanted_parents.items():
            if parent and name not in tree.broken:
                _link(tree.cohorts[parent], tree.cohorts[name])
        for name, (cohort, quotas) in queues.items():
            node = tree.queues[name] = QuotaNode(name, False, quotas)
            if cohort:
                _link(tree.cohorts[cohort], node)
        for node in tree.cohorts.values():
            if node.parent is None and node.name not in tree.broken:
                _recompute_subtree(node)
        for node in tree.queues.values():
            if node.parent is None:
                _recompute_subtree(node)
        return tree

    def clone(self, queues: Iterable[str] | None = None) -> QuotaTree:
        """A copy with private usage and shared quotas: one scheduling cycle's snapshot.

        With ``queues``, only the cohort trees holding them are copied: a cycle reads and
        changes nothing outside the trees of its heads (what a queue may borrow, the
        victims it may take, the fair-sharing tournament all stay within its tree), and
        a cycle with one head among 1,000 ClusterQueues in cohorts of 100 copied ten
        times what it reads.

        Each node's children keep the order of the original's first visit (cohorts, then
        queues, each from its topmost missing ancestor down) — the same whether the other
        trees are copied or not. No closure refers to itself here: a recursive helper
        would leave a reference cycle holding the copy after every cycle (see
        :meth:`dismantle`).
        """
        wanted: set[int] | None = None
        if queues is not None:
            roots = {id(root): root for root in
                     (self.queues[name].root() for name in queues if name in self.queues)}
            wanted = {id(node) for root in roots.values() for node in self.members(root)}
        twins: dict[int, QuotaNode] = {}
        for start in [*self.cohorts.values(), *self.queues.values()]:
            if wanted is not None and id(start) not in wanted:
                continue
            missing: list[QuotaNode] = []
            node: QuotaNode | None = start
            while node is not None and id(node) not in twins:
                missing.append(node)
                node = node.parent
            for original in reversed(missing):  # the topmost first: parents before children
                copy = twins[id(original)] = QuotaNode(
                    original.name, original.is_cohort, original.quotas, None, [],
                    original.subtree, dict(original.usage), height=original.height)
                if original.parent is not None:
                    copy.parent = twins[id(original.parent)]
                    copy.parent.children.append(copy)
        clone = QuotaTree(broken=self.broken)
        clone.cohorts = {name: twins[id(node)] for name, node in self.cohorts.items()
                         if id(node) in twins}
        clone.queues = {name: twins[id(node)] for name, node in self.queues.items()
                        if id(node) in twins}
        for node in twins.values():
            for fr in node.usage:
                _track(node, fr)
        return clone

    def dismantle(self) -> None:
        """Unlink a snapshot that is no longer used (parents and children refer to each
        other): freed at once by reference counting, instead of by the cyclic garbage
        collector, whose passes over the copies of hundreds of cycles a second stalled the
        operator (30–130 ms every 1.5 s, 200–500 ms every 20 s at Kueue's baseline shape)."""
        for node in [*self.cohorts.values(), *self.queues.values()]:
            node.parent = None
            node.children = []
            node.borrowers = {}
        self.cohorts, self.queues = {}, {}

    def set_quotas(self, node: QuotaNode, quotas: Mapping[FlavorResource, CellQuota]
                   ) -> frozenset[str]:
        """Change one node's own quota in place (its parent stays): the figures of its
        whole cohort tree are computed again, every other tree left as it is — a quota
        change anywhere in a tree can change what each of its queues may borrow, and
        nothing outside it. The usage of that tree is reset: the caller adds it back for the
        ClusterQueues returned, those of the tree."""
        node.quotas = quotas
        node.lending = _lending(quotas)
        root = node.root()
        _recompute_subtree(root)
        for member in self.members(root):  # (answers kept by stamp hold no more)
            member.stamp += 1
        self.version += 1
        return self.queue_names(root)

    def in_broken_tree(self, queue: str) -> str | None:
        """The loop message when ``queue`` hangs below a cohort loop."""
        node = self.queues[queue]
        for ancestor in node.ancestors():
            if ancestor.name in self.broken:
                return self.broken[ancestor.name]
        parent = node.parent
        if parent is None:
            return None
        return self.broken.get(parent.name)

    def add(self, queue: str, usage: Mapping[FlavorResource, Amount]) -> None:
        node = self.queues[queue]
        self.version += 1
        _stamp(node)
        for fr, amount in usage.items():
            add_usage(node, fr, amount)

    def remove(self, queue: str, usage: Mapping[FlavorResource, Amount]) -> None:
        node = self.queues[queue]
        self.version += 1
        _stamp(node)
        for fr, amount in usage.items():
            remove_usage(node, fr, amount)

    def queue_names(self, root: QuotaNode) -> frozenset[str]:
        """The ClusterQueues of the subtree under ``root`` (remembered: the tree's shape
        only changes by building a new one)."""
        names = self._queue_names.get(root.name)
        if names is None:
            names = self._queue_names[root.name] = frozenset(
                n.name for n in self.members(root) if not n.is_cohort)
        return names

    def members(self, root: QuotaNode) -> Iterable[QuotaNode]:
        """Every node of the subtree under ``root``, root first."""
        stack = [root]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(node.children)


def _lending(quotas: Mapping[FlavorResource, CellQuota]) -> dict[FlavorResource, Amount]:
    return {fr: c.lending_limit for fr, c in quotas.items() if c.lending_limit is not None}


def _link(parent: QuotaNode, child: QuotaNode) -> None:
    child.parent = parent
    parent.children.append(child)


def _recompute_subtree(node: QuotaNode) -> None:
    node.subtree = {fr: cell.nominal for fr, cell in node.quotas.items()}
    node.usage = {}
    node.borrowers = {}
    node.height = 1 if node.children else 0
    for child in node.children:
        _recompute_subtree(child)
        if child.is_cohort:
            node.height = max(node.height, child.height + 1)
        for fr, amount in child.subtree.items():
            offered = amount - child.local(fr)
            node.subtree[fr] = node.subtree.get(fr, 0) + offered


def _find_loops(parents: Mapping[str, str | None]) -> dict[str, str]:
    """Every cohort on or below a parent loop → a message naming the loop."""
    broken: dict[str, str] = {}
    for start in parents:
        seen: list[str] = []
        name: str | None = start
        while name is not None and name not in seen and name not in broken:
            seen.append(name)
            name = parents.get(name)
        if name is None:
            continue
        if name in broken:
            message = broken[name]
        else:
            loop = [*seen[seen.index(name):], name]
            message = "cohort parents form a cycle: " + " -> ".join(loop)
        for member in seen:
            broken[member] = message
    return broken
