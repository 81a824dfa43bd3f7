"""``kuota pending CQ`` — a ClusterQueue's waiting workloads, in admission order."""

from __future__ import annotations

import argparse
from typing import Any

from kuota.commands import output
from kuota.commands.output import Columns, Item
from kuota.conventions import ACTIVE, INADMISSIBLE
from kuota.service import cli
from queueing.store import NotFound

COLUMNS = Columns(("position", "name", "localqueue", "priority", "state", "reason",
                   "message"), ("lq_position",))


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "pending",
        description="The workloads waiting in a ClusterQueue, in the order the scheduler will "
                    "try them (priority, then queue time), with their position in the "
                    "ClusterQueue and in their LocalQueue and why they wait. Workloads that "
                    "can never fit as the queues are configured (ExceedsMaxQuota, "
                    "NoMatchingFlavor) come last, marked inadmissible: they block no one "
                    "(as Kueue's visibility API lists them after the active ones).")
    parser.add_argument("cluster_queue", metavar="CQ")
    output.add_output_args(parser)
    cli.add_store_args(parser)
    parser.set_defaults(func=run)


@cli.handles_errors
def run(args: argparse.Namespace) -> int:
    client = cli.client(args)

    def render() -> None:
        snap = client.snapshot()
        if args.cluster_queue not in snap.pending:
            known = ", ".join(sorted(snap.pending)) or "none"
            raise NotFound(f"ClusterQueue {args.cluster_queue} not found (known: {known})")
        items = []
        for p in snap.pending[args.cluster_queue]:
            row = {"position": p.position, "name": p.key, "localqueue": p.local_queue,
                   "lq_position": p.local_position, "priority": p.priority,
                   "state": INADMISSIBLE if p.inadmissible else ACTIVE,
                   "reason": p.reason, "message": p.message}
            namespace, _, name = p.key.partition("/")
            # Shaped as Kueue's visibility API PendingWorkload.
            obj = {"metadata": {"name": name, "namespace": namespace}, "localQueueName":
                   p.local_queue.partition("/")[2], "positionInClusterQueue": p.position,
                   "positionInLocalQueue": p.local_position, "priority": p.priority,
                   "reason": p.reason or None, "message": p.message or None,
                   "inadmissible": p.inadmissible}
            items.append(Item(obj, row))
        output.emit(items, COLUMNS, args)

    return output.watch(render, args)
