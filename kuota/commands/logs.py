"""``kuota logs WORKLOAD [--pod N] [--attempt N] [-f]`` — the output of a workload's pods."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from kuota.service import cli


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "logs",
        description="Print what the pods of the workload wrote (stdout and stderr), kept in "
                    "Redis so it works from any machine: the current attempt's, or an "
                    "earlier one's with --attempt (a requeued or retried gang keeps each "
                    "attempt's output until the workload is purged).")
    parser.add_argument("workload", help="NAMESPACE/NAME, or NAME in namespace default")
    parser.add_argument("--pod", type=int, default=None, help="only this pod index")
    parser.add_argument("--attempt", type=int, default=None, metavar="N",
                        help="this attempt (1 is the first; default the current one)")
    parser.add_argument("-f", "--follow", action="store_true",
                        help="keep printing new output until the workload finishes")
    cli.add_store_args(parser)
    parser.set_defaults(func=run)


@cli.handles_errors
def run(args: argparse.Namespace) -> int:
    handle = cli.client(args).workload(args.workload)
    if not args.follow:
        sys.stdout.write(handle.logs(pod=args.pod, attempt=args.attempt))
        return 0
    follow(handle, pod=args.pod)
    return 0


def follow(handle: Any, *, pod: int | None = None, poll: float = 0.5,
           timeout: float | None = None) -> None:
    """Print a workload's output as it comes, until it finishes (TimeoutError after
    ``timeout`` seconds). A retried or requeued gang starts a new attempt whose output
    starts afresh: each attempt is printed whole, in order, after a header — also the ones
    that came and went between two looks."""
    current, printed = 0, 0
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        status = handle.status()
        while status.attempt > current:
            if current:
                sys.stdout.write(handle.logs(pod=pod, attempt=current)[printed:])
            current, printed = current + 1, 0
            if current > 1:
                sys.stdout.write(f"==> attempt {current} <==\n")
        if current:
            text = handle.logs(pod=pod, attempt=current)
            sys.stdout.write(text[printed:])
            printed = len(text)
        sys.stdout.flush()
        if status.finished:
            return
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError(f"workload {handle.key} still {status.state} after {timeout}s")
        time.sleep(poll)
