"""``kuota node cordon|uncordon|drain|remove NAME`` — an operator's say on a worker node.

Like kubectl's verbs of the same names: *cordon* stops new pods from being
placed on the node (what runs there runs on), *drain* cordons it and has the
scheduler requeue the workloads running there, so they run again elsewhere
(maintenance, a flaky machine), *uncordon* undoes both, and *remove* forgets
a node no worker serves any more (a Lost node stays listed until removed).
"""

from __future__ import annotations

import argparse
from typing import Any

from kuota.service import cli

_ACTIONS = {
    "cordon": "no new pods are placed on the node; what runs there runs on",
    "uncordon": "pods may be placed on the node again (undoes cordon and drain)",
    "drain": "cordon the node and requeue the workloads running there (they run elsewhere)",
    "remove": "forget a node no worker serves (Lost); a Ready node is refused",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "node",
        description="Change how the scheduler treats one node of a pool. " +
                    "; ".join(f"{verb}: {what}" for verb, what in _ACTIONS.items()) + ".")
    parser.add_argument("action", choices=tuple(_ACTIONS), help="what to do")
    parser.add_argument("name", help="the node, as its worker's --node")
    cli.add_store_args(parser)
    parser.set_defaults(func=run)


@cli.handles_errors
def run(args: argparse.Namespace) -> int:
    nodes = cli.client(args).store.nodes
    if args.action == "remove":
        nodes.remove(args.name)
        print(f"node {args.name} removed")
        return 0
    nodes.set_scheduling(args.name, cordoned=args.action != "uncordon",
                         draining=args.action == "drain")
    done = {"cordon": "cordoned", "uncordon": "uncordoned", "drain": "draining"}[args.action]
    print(f"node {args.name} {done}")
    return 0
