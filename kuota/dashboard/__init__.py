"""``kuota dashboard`` and ``kuota simulate --html``: pictures of the queues.

Pure parts: :mod:`~kuota.dashboard.model` (what a page shows, from values),
:mod:`~kuota.dashboard.render` (HTML), :mod:`~kuota.dashboard.objects` (an
engine from Kubernetes object bodies), :mod:`~kuota.dashboard.trace` and
:mod:`~kuota.dashboard.report` (the simulator's timeline report). Adapters:
:mod:`~kuota.dashboard.redis_source`, :mod:`~kuota.dashboard.kube_source`
(the two stores, read-only) and :mod:`~kuota.dashboard.server` (aiohttp).
"""
