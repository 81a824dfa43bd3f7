"""Multi-cluster dispatch: choose the member cluster for an admitted workload, and explain it.

Pure core (values in, values out; no I/O, the clock passed in). After quota
is reserved in the manager, a ClusterQueue's ``kuota.dev/multicluster``
admission check chooses a member cluster with Karmada's filter → score →
select flow, and later moves workloads off lost members. Modules, one noun
each:

:mod:`~multicluster.model` (a member as a value, with memoised summaries),
:mod:`~multicluster.convert` (MemberCluster objects and nodes to values, and
capacity back to status), :mod:`~multicluster.hints` (the
``kuota.dev/cluster-selector`` and ``kuota.dev/datasets`` annotations),
:mod:`~multicluster.request` (the admitted pods as a member runs them),
:mod:`~multicluster.framework` (statuses, plugin protocols, normalisers,
registry), :mod:`~multicluster.filters` and :mod:`~multicluster.scorers`
(the built-in plugins), :mod:`~multicluster.capacity` (does the gang fit
node by node), :mod:`~multicluster.settings` (MultiClusterConfig to plugins
and weights), :mod:`~multicluster.decision` (``select``),
:mod:`~multicluster.explain` (rendering a decision),
:mod:`~multicluster.failover` (lost members, moves, stale copies).
See ``docs/multicluster.md``.
"""
