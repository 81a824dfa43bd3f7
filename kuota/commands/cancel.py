"""``kuota cancel WORKLOAD`` — finish a workload as Cancelled and stop its pods."""

from __future__ import annotations

import argparse
from typing import Any

from kuota.service import cli


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "cancel",
        description="Finish a workload as Cancelled. Running pods get SIGTERM (SIGKILL after "
                    "the worker's grace period); the scheduler releases its quota.")
    parser.add_argument("workload", help="NAMESPACE/NAME, or NAME in namespace default")
    cli.add_store_args(parser)
    parser.set_defaults(func=run)


@cli.handles_errors
def run(args: argparse.Namespace) -> int:
    cli.client(args).cancel(args.workload)
    print(f"workload {args.workload} cancelled")
    return 0
