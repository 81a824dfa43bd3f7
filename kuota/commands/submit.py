"""``kuota submit`` — queue a workload (Redis mode)."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kuota.commands import logs
from kuota.service import cli

if TYPE_CHECKING:
    from kuota.client import Client, WorkloadHandle, WorkloadStatus
from quota.resources import QuantityError, format_vector, parse_vector


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "submit",
        description="Submit a workload to a LocalQueue: COUNT pods each running CMD ARGS (an "
                    "argument list, never a shell string) with the given requests, admitted "
                    "together or not at all. Or submit a Workload manifest with -f. Invalid "
                    "submissions are refused with every problem listed (exit status 2). A "
                    "workload that can never be admitted as the queues are configured (more "
                    "than its ClusterQueue can ever get, a resource no flavor covers, a "
                    "LocalQueue that does not exist) is stored with a warning naming why.",
        usage="%(prog)s --queue NS/LQ [options] -- CMD [ARGS...]\n"
              "       %(prog)s -f workload.yaml [--queue NS/LQ] [options]")
    parser.add_argument("--queue", "-q", metavar="NS/LQ", help="LocalQueue, as NAMESPACE/NAME")
    parser.add_argument("--name", help="workload name (default CMD-random)")
    parser.add_argument("--priority-class", help="WorkloadPriorityClass name")
    parser.add_argument("--priority", type=int, default=None, help="explicit priority")
    parser.add_argument("--count", type=int, default=1, help="pods in the gang (default 1)")
    parser.add_argument("--requests", default="", metavar="LIST",
                        help="per-pod requests, e.g. cpu=1,memory=2Gi,nvidia.com/gpu=1")
    parser.add_argument("--backoff-limit", type=int, default=0,
                        help="retries of the whole gang after a pod fails (default 0)")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="environment variable for the pods (repeatable)")
    parser.add_argument("-f", "--filename", metavar="FILE",
                        help="a Workload manifest (a YAML file of at most 3 MiB)")
    parser.add_argument("--wait", action="store_true",
                        help="wait until it finishes; exit with its status: 0 if it "
                             "succeeded; if it failed, its first failed pod's exit code "
                             "(128+N for signal N, as kuota history shows it); else 1 "
                             "(cancelled, rejected, no pod exit to report, or it can never "
                             "be admitted as the queues are configured: ExceedsMaxQuota, "
                             "NoMatchingFlavor, LocalQueueNotFound, ClusterQueueNotFound; "
                             "said as soon as known, the workload stays queued)")
    parser.add_argument("--timeout", type=float, default=None, help="with --wait: give up "
                        "after this many seconds (exit 1)")
    parser.add_argument("--follow", action="store_true",
                        help="with --wait: print the pods' output as it comes (as "
                             "`kuota logs -f`); the status line goes to stderr then")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    cli.add_store_args(parser)
    parser.set_defaults(func=run)


@cli.handles_errors
def run(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if args.filename and command:
        print("error: give either -f FILE or -- CMD ARGS, not both", file=sys.stderr)
        return 2
    from kuota import conventions
    from kuota.client import NeverFits, NeverFitsWarning

    client = cli.client(args)
    if args.follow and not args.wait:
        print("error: --follow needs --wait", file=sys.stderr)
        return 2
    with warnings.catch_warnings():
        # (said below as a CLI line, not as a Python warning with a file and line)
        warnings.simplefilter("ignore", NeverFitsWarning)
        handle = _submit(client, args, command)
    if isinstance(handle, int):
        return handle
    # With --follow, stdout carries the job's own output only (pipe it as the job's).
    say = sys.stderr if args.follow else sys.stdout
    print(f"workload {handle.key} submitted", file=say)
    if handle.never_fits is not None:
        reason, message = handle.never_fits
        print(f"warning: workload {handle.key} can never be admitted as the queues are "
              f"configured: {reason}: {message}. It waits set aside, blocking no one, until "
              f"the queues change (`kuota cancel {handle.key}` removes it)", file=sys.stderr)
    if handle.queued:
        print("note: sent as a request of your namespace; no scheduler has taken it yet, it "
              "is stored when one runs", file=sys.stderr)
    cli.warn_without_scheduler(client, submitted=True)
    if not args.wait:
        return 0
    try:
        if args.follow:
            logs.follow(handle, timeout=args.timeout)
        status = handle.wait(args.timeout)
    except NeverFits as exc:
        print(f"error: {exc}; it stays queued (`kuota cancel {handle.key}` removes it)",
              file=sys.stderr)
        return conventions.FAILED
    except TimeoutError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"workload {handle.key} {status.outcome or status.state}: {status.message}",
          file=say)
    return exit_status(status)


def _submit(client: Client, args: argparse.Namespace, command: list[str]
            ) -> WorkloadHandle | int:
    """Submit as the flags say: the handle, or the exit status of invalid flags."""
    if args.filename:
        return client.submit(workload=Path(args.filename), queue=args.queue)
    try:
        vector = parse_vector(args.requests)
    except QuantityError as exc:
        print(f"error: --requests: {exc}", file=sys.stderr)
        return 2
    requests = {k: format_vector({k: v}).split("=", 1)[1] for k, v in vector.items()}
    env: dict[str, str] = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(f"error: --env {item!r} is not KEY=VALUE", file=sys.stderr)
            return 2
        env[key] = value
    return client.submit(command, queue=args.queue, name=args.name, count=args.count,
                         requests=requests, priority_class=args.priority_class,
                         priority=args.priority, backoff_limit=args.backoff_limit,
                         env=env or None)


def exit_status(status: WorkloadStatus) -> int:
    """What ``--wait`` exits with (:func:`kuota.conventions.wait_status`): 0 when the
    workload succeeded, the exit code of its first failed pod when it failed (128+N for a
    pod killed by signal N), else 1 (cancelled, rejected, no pod exit to report)."""
    from kuota.conventions import wait_status

    return wait_status(status.outcome, [p.exit_code for p in
                                         sorted(status.pods, key=lambda p: p.index)])
