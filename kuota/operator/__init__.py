"""The Kubernetes operator: queue-labelled Jobs and pod groups become Workloads the engine admits.

Events in, decisions out — the modules, in the order data flows:

* :mod:`.handlers` — kopf: the webhooks, queue-object watches, startup and cleanup;
* :mod:`.informer` — list-then-watch for the busy kinds (Jobs, Workloads, Nodes, and the
  pods of pod groups or pinned to topology domains);
* :mod:`.objects` — the newest body of every watched object;
* :mod:`.controller` — objects → engine calls (restoring held quota on rebuild);
* :mod:`.loop` — leadership, the initial lists, the cycle and status loops;
* :mod:`.writer` — engine events → Workload status, queue status, Events;
* :mod:`.owners` — creating, starting and stopping Jobs and pod groups;
* :mod:`.ungater` — pinning pods to their topology domains once admitted;
* :mod:`.jobs`, :mod:`.podgroups`, :mod:`.status`, :mod:`.webhooks`, :mod:`.topology`,
  :mod:`.pinning` — pure translations and decisions;
* :mod:`.client`, :mod:`.leader`, :mod:`.metrics`, :mod:`.probes` — I/O helpers.

See docs/operator.md for installing and operating it.
"""
