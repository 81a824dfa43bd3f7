"""``kuota logs WORKLOAD [--pod N]`` — the output of a workload's pods."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from kuota.service import cli


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "logs",
        description="Print what the pods of the workload's current attempt wrote (stdout and "
                    "stderr), kept in Redis so it works from any machine.")
    parser.add_argument("workload", help="NAMESPACE/NAME, or NAME in namespace default")
    parser.add_argument("--pod", type=int, default=None, help="only this pod index")
    parser.add_argument("-f", "--follow", action="store_true",
                        help="keep printing new output until the workload finishes")
    cli.add_store_args(parser)
    parser.set_defaults(func=run)


@cli.handles_errors
def run(args: argparse.Namespace) -> int:
    client = cli.client(args)
    handle = client.workload(args.workload)
    if not args.follow:
        sys.stdout.write(handle.logs(pod=args.pod))
        return 0
    printed = 0
    while True:
        finished = handle.status().finished
        text = handle.logs(pod=args.pod)
        sys.stdout.write(text[printed:])
        sys.stdout.flush()
        printed = len(text)
        if finished:
            return 0
        time.sleep(0.5)
