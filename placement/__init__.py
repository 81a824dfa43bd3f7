"""Placement: node fit, binpack and topology scoring, gang placement.

Pure core (values in, values out; no I/O). Modules, one noun each:
:mod:`~placement.model` (nodes, pod requirements, taints, affinity),
:mod:`~placement.fit` (kube-scheduler's filters), :mod:`~placement.scoring`
(kube-scheduler's resource scores, weighted combination),
:mod:`~placement.topology` (topology levels, topology score),
:mod:`~placement.gang` (all-or-nothing gang placement),
:mod:`~placement.domains` (topology domain assignment for admission),
:mod:`~placement.objects` (Kubernetes JSON to values),
:mod:`~placement.cache` (nodes and bound-pod usage fed by events),
:mod:`~placement.memo` (reuse of per-node answers), :mod:`~placement.ranking`
(a pool's nodes kept ranked between gangs). See ``docs/placement.md``.
"""
