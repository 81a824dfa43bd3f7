"""``kuota apply -f FILE`` — store queue objects in Redis (Redis mode)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kuota.service import cli


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "apply",
        description="Check and store queue objects from YAML files — the same manifests as the "
                    "CRDs (Kueue v1beta1/v1beta2 files are converted) — in the Redis store; "
                    "Namespace documents set namespace labels. Nothing is stored if any object "
                    "is invalid. One line per object, as kubectl apply: created, "
                    "configured (changed) or unchanged (not written again). Exit status: 0 "
                    "stored, 1 store error, 2 invalid input.")
    parser.add_argument("-f", "--filename", action="append", required=True, metavar="FILE",
                        help="YAML file, at most 3 MiB (repeatable)")
    cli.add_store_args(parser)
    parser.set_defaults(func=run)


@cli.handles_errors
def run(args: argparse.Namespace) -> int:
    client = cli.client(args)
    for path in args.filename:
        for name, verdict in client.apply_changes(Path(path)):  # a file, never YAML text
            print(f"{name} {verdict}")
    return 0
