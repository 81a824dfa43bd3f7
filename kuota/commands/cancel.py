"""``kuota cancel WORKLOAD...`` or ``kuota cancel -l/--queue/--state`` — finish workloads as
Cancelled and stop their pods (Slurm's ``scancel``, with its filters)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kuota.client import workload_key
from kuota.commands import output
from kuota.commands.get import in_queue, parse_state, workload_labels, workload_matches
from kuota.conventions import LIVE_STATES
from kuota.service import cli
from queueing.store import StoreError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "cancel",
        description="Finish workloads as Cancelled: by name, or every unfinished workload "
                    "matching the selector, queue and state given (at least one). Running pods "
                    "get SIGTERM (SIGKILL after the worker's grace period); the scheduler "
                    "releases their quota. Exit status 1 if any could not be cancelled.")
    parser.add_argument("workloads", nargs="*", metavar="WORKLOAD",
                        help="NAMESPACE/NAME, or NAME in namespace default")
    output.add_selector_arg(parser)
    parser.add_argument("--queue", "-q", metavar="QUEUE",
                        help="the workloads of this LocalQueue (NAMESPACE/NAME) or ClusterQueue")
    parser.add_argument("--state", metavar="STATE", type=parse_state,
                        help="only workloads in this state: " + ", ".join(LIVE_STATES))
    parser.add_argument("--dry-run", action="store_true",
                        help="with a selector: list what would be cancelled, cancel nothing")
    cli.add_store_args(parser)
    parser.set_defaults(func=run)


@cli.handles_errors
def run(args: argparse.Namespace) -> int:
    by_filter = bool(args.selector or args.queue or args.state)
    if bool(args.workloads) == by_filter:
        print("error: give WORKLOAD names or a filter (-l, --queue, --state), not both "
              "and not neither", file=sys.stderr)
        return 2
    if args.state is not None and args.state not in LIVE_STATES:
        raise ValueError(f"--state {args.state}: only unfinished workloads can be cancelled "
                         f"({', '.join(LIVE_STATES)})")
    client = cli.client(args)
    if not by_filter:
        for name in args.workloads:
            if client.cancel(name):
                print(f"workload {workload_key(name)} cancelled")
            else:
                print(f"workload {workload_key(name)}: cancel request queued (no scheduler has "
                      "taken it yet)")
        return 0
    selector = output.parse_selector(args.selector)
    args.include_finished, args.name = False, None
    queued = in_queue(client, args.queue)
    chosen = [w.key for w in client.workloads(finished=False)
              if w.state != "Finished" and workload_matches(w, args) and queued(w)
              and output.matches(workload_labels(w), selector)]
    failed = 0
    for key in sorted(chosen):
        if args.dry_run:
            print(f"workload {key} would be cancelled")
            continue
        try:
            client.cancel(key)
        except StoreError as exc:  # finished meanwhile, say: the others still go
            print(f"error: {exc}", file=sys.stderr)
            failed += 1
            continue
        print(f"workload {key} cancelled")
    if not chosen:
        print("no workload matches", file=sys.stderr)
    return 1 if failed else 0
