"""``kuota get workloads|clusterqueues|localqueues|nodes`` — tables of the Redis store."""

from __future__ import annotations

import argparse
import time
from typing import Any

from rich.console import Console
from rich.table import Table

from kuota.service import cli
from quota.resources import format_amount

KINDS = {
    "workloads": "workloads", "workload": "workloads", "wl": "workloads",
    "clusterqueues": "clusterqueues", "clusterqueue": "clusterqueues", "cq": "clusterqueues",
    "localqueues": "localqueues", "localqueue": "localqueues", "lq": "localqueues",
    "nodes": "nodes", "node": "nodes",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "get", help="list workloads, clusterqueues, localqueues or nodes (Redis mode)",
        description="Show what the Redis store holds. ClusterQueue usage, borrowing and "
                    "pending counts are computed by the same engine the scheduler runs.")
    parser.add_argument("kind", choices=sorted(KINDS), metavar="KIND",
                        help="workloads (wl), clusterqueues (cq), localqueues (lq) or nodes")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    parser.add_argument("-A", "--all", action="store_true",
                        help="workloads: include finished ones")
    cli.add_store_args(parser)
    parser.set_defaults(func=run)


@cli.handles_errors
def run(args: argparse.Namespace) -> int:
    client = cli.client(args)
    kind = KINDS[args.kind]
    rows: list[dict[str, Any]]
    if kind == "workloads":
        rows = _workloads(client, include_finished=args.all)
    elif kind == "nodes":
        rows = _nodes(client)
    else:
        snap = client.snapshot()
        rows = _cluster_queues(snap) if kind == "clusterqueues" else _local_queues(snap)
    if args.output == "json":
        cli.print_json(rows)
        return 0
    table = Table(box=None, header_style="bold")
    columns = list(rows[0]) if rows else _empty_columns(kind)
    for column in columns:
        table.add_column(column.upper())
    for row in rows:
        table.add_row(*(str(row[c]) for c in columns))
    Console(width=200).print(table)
    return 0


def _empty_columns(kind: str) -> list[str]:
    return {"workloads": ["name", "queue", "state"], "nodes": ["name", "pool", "state"],
            "clusterqueues": ["name", "usage"], "localqueues": ["name", "clusterqueue"]}[kind]


def _age(since: float | None) -> str:
    if since is None:
        return "-"
    seconds = max(0, int(time.time() - since))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h"


def _workloads(client: Any, *, include_finished: bool) -> list[dict[str, Any]]:
    rows = []
    for w in client.workloads():
        if w.state == "Finished" and not include_finished:
            continue
        if w.state == "Admitted":
            status = "Running" if w.placement else "Placing"
        else:
            status = w.outcome.value or w.state.value
        # A workload dispatched here by a manager has no queue: it shows who sent it.
        cluster_queue = f"dispatched:{w.origin}" if w.dispatched else w.cluster_queue or "-"
        rows.append({"name": w.key, "queue": w.queue or "-", "state": status,
                     "clusterqueue": cluster_queue, "pods": w.pods or "-",
                     "nodes": ",".join(dict.fromkeys(w.placement)) or "-",
                     "attempt": w.attempt, "age": _age(w.created),
                     "reason": w.reason or "-", "message": w.message or ""})
    return rows


def _nodes(client: Any) -> list[dict[str, Any]]:
    pods = client.store.nodes.pod_ids(client.store.nodes.names())
    now = client.store.nodes.time()
    rows = []
    for n in client.nodes():
        state = n.state.value + (",Draining" if n.draining else
                                 ",SchedulingDisabled" if n.cordoned else "")
        rows.append({"name": n.name, "pool": n.pool, "state": state,
                     "capacity": ",".join(f"{k}={format_amount(v, k)}"
                                          for k, v in sorted(n.capacity.items())),
                     "pods": len(pods.get(n.name, ())),
                     "labels": ",".join(f"{k}={v}" for k, v in sorted(n.labels.items())) or "-",
                     "heartbeat": f"{max(0.0, now - n.heartbeat):.1f}s ago",
                     "reason": n.reason or "-"})
    return rows


def _cluster_queues(snap: Any) -> list[dict[str, Any]]:
    rows = []
    for cq in snap.cluster_queues:
        usage = " ".join(f"{c.resource}[{c.flavor}]={format_amount(c.usage, c.resource)}/"
                         f"{format_amount(c.nominal, c.resource)}" for c in cq.cells)
        borrowed = " ".join(f"{c.resource}[{c.flavor}]={format_amount(c.borrowed, c.resource)}"
                            for c in cq.cells if c.borrowed) or "-"
        rows.append({"name": cq.name, "cohort": cq.cohort or "-", "usage": usage or "-",
                     "borrowed": borrowed, "pending": cq.pending, "admitted": cq.admitted,
                     "active": "yes" if cq.active else f"no: {cq.message}"})
    return rows


def _local_queues(snap: Any) -> list[dict[str, Any]]:
    return [{"name": lq.key, "clusterqueue": lq.cluster_queue, "pending": lq.pending,
             "admitted": lq.admitted} for lq in snap.local_queues]
