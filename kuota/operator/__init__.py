"""The Kubernetes operator: queue-labelled Jobs become Workloads the engine admits.

Events in, decisions out — the modules, in the order data flows:

* :mod:`.handlers` — kopf: watches, the Job webhook, startup and cleanup;
* :mod:`.objects` — the newest body of every watched object;
* :mod:`.controller` — objects → engine calls (and restoring on rebuild);
* :mod:`.loop` — leadership, list-then-watch, the cycle and status loops;
* :mod:`.writer` — engine events → status patches, Job starts and stops, Events;
* :mod:`.jobs`, :mod:`.status`, :mod:`.webhooks` — pure translations;
* :mod:`.client`, :mod:`.leader`, :mod:`.metrics`, :mod:`.probes` — I/O helpers.

See docs/operator.md for installing and operating it.
"""
