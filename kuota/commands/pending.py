"""``kuota pending CQ`` — a ClusterQueue's waiting workloads, in admission order."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from kuota.service import cli


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "pending", help="list a ClusterQueue's pending workloads with their positions",
        description="The workloads waiting in a ClusterQueue, in the order the scheduler will "
                    "try them (priority, then queue time), with their position in the "
                    "ClusterQueue and in their LocalQueue and why they wait.")
    parser.add_argument("cluster_queue", metavar="CQ")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    cli.add_store_args(parser)
    parser.set_defaults(func=run)


@cli.handles_errors
def run(args: argparse.Namespace) -> int:
    snap = cli.client(args).snapshot()
    if args.cluster_queue not in snap.pending:
        known = ", ".join(sorted(snap.pending)) or "none"
        print(f"error: ClusterQueue {args.cluster_queue} not found (known: {known})",
              file=sys.stderr)
        return 1
    rows = [{"position": p.position, "name": p.key, "localqueue": p.local_queue,
             "lq_position": p.local_position, "priority": p.priority,
             "reason": p.reason or "-", "message": p.message}
            for p in snap.pending[args.cluster_queue]]
    if args.output == "json":
        cli.print_json(rows)
        return 0
    table = Table(box=None, header_style="bold")
    for column in ("position", "name", "localqueue", "lq_position", "priority", "reason",
                   "message"):
        table.add_column(column.upper())
    for row in rows:
        table.add_row(*(str(v) for v in row.values()))
    Console(width=200).print(table)
    return 0
