"""``kuota status`` — is the pool working? Schedulers, the lease, pools and workers.

What ``rq info`` and Slurm's ``sinfo`` tell their users, for a kuota deployment:

* **schedulers**: every ``kuota scheduler`` that announced itself
  (:mod:`kuota.service.presence`), which one leads and for how long, and which
  stopped responding. With no live leader, nothing is admitted or placed, and
  the output says so first — a dead scheduler must not look like a quiet one;
* **the lease**: who holds it, its fencing token and when it expires;
* **pools**: per pool, nodes Ready/total and, per resource, what is free of
  the Ready nodes' capacity (capacity minus the requests of the pods placed
  there), as ``sinfo`` shows partitions;
* **workers**: each node, its state, pods and last heartbeat;
* **workloads**: how many wait, run and have finished;
* **the store**: which Redis (behind Sentinel: which master now), its version,
  and whether it may lose writes it acknowledged — what a crash would cost;
* **quarantined records**: every record that did not parse (written around
  kuota), each named with why — those the scheduler and workers set aside
  (:mod:`queueing.store.quarantine`) and those this very read met.

Exit status 0 when a live scheduler leads, 1 when none does (so a health
check can run ``kuota status -o json >/dev/null``), 2 on invalid input.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any, TypeVar

from kuota.commands import output
from kuota.service import cli, presence
from queueing.store import PodRef


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "status",
        description="Schedulers (leader, lease age, standbys, the ones not responding), pools "
                    "with free/total per resource (like sinfo), workers and their heartbeats, "
                    "workload counts, and every quarantined record (one that did not parse, "
                    "written around kuota) with why. Exit status 1 when no live scheduler "
                    "holds the lease: "
                    "nothing is admitted or placed then.")
    output.add_output_args(parser, choices=("table", "json", "yaml"))
    cli.add_store_args(parser)
    parser.set_defaults(func=run)


@cli.handles_errors
def run(args: argparse.Namespace) -> int:
    client = cli.client(args)
    leading = [True]

    def render() -> None:
        report = collect(client.store)
        report["store"] = store_report(client.connection)
        leading[0] = report["leader"] is not None and report["leader"]["announced"]
        if args.output == "json":
            cli.print_json(report)
        elif args.output == "yaml":
            import yaml

            sys.stdout.write(yaml.safe_dump(report, sort_keys=False))
        else:
            show(report)

    status = output.watch(render, args)
    return status if status or leading[0] else 1


def collect(store: Any) -> dict[str, Any]:
    """The status report, as plain data (what ``-o json`` prints)."""
    now = store.nodes.time()  # the server's clock: the heartbeats were written by it
    holder = _tolerant(lambda: store.redis.get(store.keys.lease))
    expires = store.redis.pttl(store.keys.lease) if holder else -2
    identity, _, token = str(holder or "").rpartition("|")
    schedulers = []
    for p in _tolerant(lambda: presence.read(store)) or []:
        state = "NotResponding" if p.dead(now) else "Leader" if p.identity == identity \
            else "Standby"
        schedulers.append({
            "identity": p.identity, "host": p.host, "pid": p.pid, "state": state,
            "started": output.rfc3339(p.started), "lastSeen": output.rfc3339(p.seen),
            "lastSeenSecondsAgo": round(max(0.0, now - p.seen), 1),
            "leadingSince": output.rfc3339(p.leading_since) if state == "Leader" else None,
            "leadingSeconds": round(now - p.leading_since, 1)
            if state == "Leader" and p.leading_since else None,
            "terms": p.terms})
    live_leader = identity and any(s["identity"] == identity and s["state"] == "Leader"
                                   for s in schedulers)
    leader = None
    if holder:
        leader = {"identity": identity, "token": int(token) if token.isdigit() else None,
                  "expiresInSeconds": round(expires / 1000, 1) if expires > 0 else None,
                  "announced": bool(live_leader)}
    malformed: dict[str, str] = {}
    nodes, pools = _tolerant(lambda: _nodes_and_pools(store, now, malformed)) or ([], [])
    return {"leader": leader, "schedulers": schedulers, "pools": pools, "nodes": nodes,
            "workloads": _tolerant(lambda: _workload_counts(store)),
            "quarantined": quarantined(store, malformed)}


T = TypeVar("T")


def _tolerant(read: Callable[[], T]) -> T | None:
    """``read()``, or None when a key it reads holds the wrong Redis type (written around
    kuota): the report goes on, and names that key under ``quarantined``."""
    import redis

    try:
        return read()
    except redis.ResponseError as exc:
        if "WRONGTYPE" not in str(exc):
            raise
        return None


def _workload_counts(store: Any) -> dict[str, int]:
    # The finished ones are counted, not read: a pool may retain a week of them.
    unfinished = store.workloads.unfinished(spec=False)
    workloads = Counter(_bucket(w) for w in unfinished.values())
    workloads["finished"] = max(0, store.workloads.count() - len(unfinished))
    return {k: workloads.get(k, 0) for k in ("pending", "running", "finished")}


def quarantined(store: Any, found: dict[str, str]) -> dict[str, str]:
    """Every malformed record -> why: those set aside (the quarantine hash), keys of the
    wrong type not set aside yet, the queue objects and namespace labels that do not
    parse, and what ``found`` met while reading."""
    from queueing.store.objects import KINDS

    problems = dict(found)
    problems.update(store.quarantine.wrong_types())
    _tolerant(lambda: store.objects.namespaces(problems))  # (of the wrong type: above)
    for kind in KINDS:
        _tolerant(functools.partial(store.objects.manifests, kind, problems))
    return dict(sorted({**problems, **store.quarantine.all()}.items()))


def store_report(conn: Any) -> dict[str, Any]:
    """Which Redis, and whether it may lose writes it acknowledged (``may_lose_writes``)."""
    import redis

    from kuota.service.connection import may_lose_writes

    info: dict[str, Any] = {}
    if not conn.embedded:
        try:
            info = conn.text.info("server")
        except redis.ResponseError:  # INFO refused to this user: no version shown
            info = {}
    pool = conn.text.connection_pool
    master = pool.get_master_address() if hasattr(pool, "get_master_address") else None
    return {"url": conn.describe(), "master": f"{master[0]}:{master[1]}" if master else None,
            "version": info.get("redis_version"), "server": info.get("run_id"),
            "mayLoseWrites": "it lives only as long as this process" if conn.embedded
            else may_lose_writes(conn)}


def _bucket(record: Any) -> str:
    return {"Pending": "pending", "Finished": "finished"}.get(record.state.value, "running")


def _nodes_and_pools(store: Any, now: float, malformed: dict[str, str] | None = None,
                     ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The nodes and the pools; records that do not parse (a member of a pods set that is
    no pod id, an unreadable pod) are left out and named in ``malformed``."""
    from quota.resources import format_amount

    records = store.nodes.all()
    pod_ids = store.nodes.pod_ids((r.name for r in records), bad=malformed)
    refs = {pid: PodRef.parse(pid) for ids in pod_ids.values() for pid in ids}
    pods = dict(zip(refs, store.pods.get_many(list(refs.values())), strict=True))
    for pod in pods.values():
        if pod is not None and pod.corrupt and malformed is not None:
            malformed[store.keys.pod(pod.ref)] = pod.corrupt
    capacity: dict[str, Counter[str]] = defaultdict(Counter)
    used: dict[str, Counter[str]] = defaultdict(Counter)
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    nodes = []
    for n in records:
        counts[n.pool]["total"] += 1
        ready = n.state.value == "Ready"
        if ready:
            counts[n.pool]["ready"] += 1
            capacity[n.pool].update(n.capacity)
            for pid in pod_ids.get(n.name, ()):
                pod = pods.get(pid)
                if pod is not None:
                    used[n.pool].update(pod.requests)
        nodes.append({"name": n.name, "pool": n.pool,
                      "state": n.state.value + (",Draining" if n.draining else
                                                ",SchedulingDisabled" if n.cordoned else ""),
                      "pods": len(pod_ids.get(n.name, ())),
                      "heartbeatSecondsAgo": round(max(0.0, now - n.heartbeat), 1),
                      "reason": n.reason or None})
    pools = []
    for pool in sorted(counts):
        resources = {r: {"free": format_amount(max(0, total - used[pool][r]), r),
                         "total": format_amount(total, r)}
                     for r, total in sorted(capacity[pool].items())}
        pools.append({"name": pool, "nodesReady": counts[pool]["ready"],
                      "nodes": counts[pool]["total"], "resources": resources})
    return nodes, pools


def show(report: dict[str, Any]) -> None:
    leader = report["leader"]
    if leader is None:
        print("NO SCHEDULER HOLDS THE LEASE: nothing is admitted or placed "
              "(start `kuota scheduler`)")
    else:
        expires = leader["expiresInSeconds"]
        print(f"leader: {leader['identity']} (term {leader['token']}, lease expires in "
              f"{expires if expires is not None else '?'}s)"
              + ("" if leader["announced"] else
                 " — it is not responding: a standby takes over when the lease expires"))
    print()
    output.print_table([{**s, "leading": output.duration(s["leadingSeconds"])
                         if s["leadingSeconds"] is not None else None,
                         "last_seen": f"{s['lastSeenSecondsAgo']}s ago"}
                        for s in report["schedulers"]],
                       ("identity", "host", "pid", "state", "leading", "last_seen"))
    print()
    output.print_table([{"pool": p["name"], "nodes": f"{p['nodesReady']}/{p['nodes']}",
                         "free/total": " ".join(f"{r}={v['free']}/{v['total']}"
                                                for r, v in p["resources"].items())}
                        for p in report["pools"]], ("pool", "nodes", "free/total"),
                       shrink=("free/total",))
    print()
    output.print_table([{**n, "heartbeat": f"{n['heartbeatSecondsAgo']}s ago"}
                        for n in report["nodes"]],
                       ("name", "pool", "state", "pods", "heartbeat", "reason"))
    w = report["workloads"]
    print(f"\nworkloads: {w['pending']} pending, {w['running']} admitted, "
          f"{w['finished']} finished (kept)" if w is not None else
          "\nworkloads: unknown (a key of the wrong type, below)")
    for what, why in report.get("quarantined", {}).items():
        print(f"quarantined: {what}: {why}")
    store = report.get("store")
    if store is not None:
        where = store["url"] + (f", master {store['master']}" if store["master"] else "")
        version = f" (Redis {store['version']})" if store["version"] else ""
        lossy = store["mayLoseWrites"]
        print(f"store: {where}{version}: "
              + (f"may lose acknowledged writes: {lossy}" if lossy else
                 "keeps every write it acknowledged"))
