"""``kuota scheduler`` — the admission scheduler service for Redis mode."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from typing import Any

from kuota import gctuning
from kuota.service import cli, metrics, presence
from kuota.service.connection import may_lose_writes
from kuota.service.leader import Timing
from kuota.service.scheduler import SchedulerOptions, SchedulerService, default_identity
from quota.config import EngineConfig

log = logging.getLogger(__name__)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "scheduler",
        description="Run admission in real time against the Redis store: rebuild from Redis, "
                    "admit workloads into their ClusterQueues' quota, place admitted gangs on "
                    "pool nodes and send their pods to the workers. Run several for high "
                    "availability: one holds the lease and works, the others keep a copy of the "
                    "store current and take over within one --lease-ttl when it dies.")
    parser.add_argument("--node-timeout", type=float, default=30.0, metavar="SECONDS",
                        help="a node silent this long is lost; its workloads are requeued "
                             "(default 30)")
    parser.add_argument("--lease-ttl", type=float, default=5.0, metavar="SECONDS",
                        help="leader lease TTL: how fast a standby takes over (default 5)")
    parser.add_argument("--poll", type=float, default=0.5, metavar="SECONDS",
                        help="longest idle wait for events (default 0.5)")
    parser.add_argument("--restart-pause", type=float, default=6.0, metavar="SECONDS",
                        help="after Redis restarted, wait at least this long before leading "
                             "again, so that workers stop the pods of placements Redis lost "
                             "before the same pods are placed again; longer when a registered "
                             "worker's --grace plus its quarter-second stop check needs more; "
                             "0 never waits, for a Redis that never loses an acknowledged "
                             "write (appendfsync always, no Sentinel promotions) (default 6)")
    parser.add_argument("--batch", type=float, default=0.01, metavar="SECONDS",
                        help="shortest time between scheduling rounds; what arrives meanwhile "
                             "is decided as one batch (default 0.01)")
    parser.add_argument("--retain-finished", type=cli.parse_retention, default="7d",
                        metavar="DURATION",
                        help="how long finished workloads (record, history, pod logs) stay "
                             "in Redis: 90s, 30m, 12h, 7d... or 'forever' (default 7d)")
    parser.add_argument("--forget-lost-nodes", type=cli.parse_retention, default="1d",
                        metavar="DURATION",
                        help="how long the record of a node whose worker is gone (Lost) is "
                             "kept: 30m, 12h, 1d... or 'forever' (until `kuota node remove`) "
                             "(default 1d)")
    parser.add_argument("--identity", default=None,
                        help="name of this scheduler in the lease (default host-pid-random)")
    parser.add_argument("--fair-sharing", action="store_true",
                        help="order admissions and preemptions by fair sharing (Kueue's)")
    parser.add_argument("--metrics-listen", metavar="HOST:PORT", default=None,
                        help="serve Prometheus /metrics here, under the operator's (Kueue's) "
                             "metric names, e.g. 127.0.0.1:9090 (default: not served)")
    cli.add_store_args(parser)
    cli.add_log_args(parser)
    parser.set_defaults(func=run)


@cli.handles_errors
def run(args: argparse.Namespace) -> int:
    cli.setup_logging(args)
    gctuning.tune()
    for flag in ("batch", "restart_pause"):
        if getattr(args, flag) < 0:
            print(f"error: --{flag.replace('_', '-')} must not be negative", file=sys.stderr)
            return 2
    for flag in ("node_timeout", "lease_ttl", "poll"):
        if getattr(args, flag) <= 0:
            print(f"error: --{flag.replace('_', '-')} must be positive", file=sys.stderr)
            return 2
    address = metrics.parse_address(args.metrics_listen) if args.metrics_listen else None
    conn = cli.connection(args)
    if args.restart_pause == 0:
        lossy = may_lose_writes(conn)
        if lossy is not None:
            log.warning("--restart-pause 0 trusts Redis to keep every write it acknowledged, "
                        "but %s; a placement lost that way may run its pods twice at once",
                        lossy)
    announcer = presence.Announcer(clock=time.time)
    options = SchedulerOptions(
        identity=args.identity or default_identity(),
        timing=Timing(lease_ttl=args.lease_ttl, node_timeout=args.node_timeout, poll=args.poll,
                      batch=args.batch, retain_finished=args.retain_finished,
                      forget_lost_nodes=args.forget_lost_nodes,
                      restart_pause=args.restart_pause),
        engine=EngineConfig(fair_sharing=args.fair_sharing), observers=[announcer])
    stop_serving = None
    if address is not None:
        exported = metrics.SchedulerMetrics(clock=time.time)
        options.observers.append(exported.observe)
        options.on_events = exported.observe_events
        try:
            stop_serving = metrics.serve(exported, *address)
        except OSError as exc:
            print(f"error: --metrics-listen {args.metrics_listen}: {exc.strerror or exc}",
                  file=sys.stderr)
            return 1
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    service = SchedulerService(conn, options)
    try:
        service.run(stop)
    finally:
        announcer.leave(service)
        if stop_serving is not None:
            stop_serving()
    return 0
