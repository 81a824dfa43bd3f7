"""``kuota dashboard`` — a read-only web dashboard over the Redis store or a cluster.

The pages, the live updates and the security notes are in docs/dashboard.md;
the code is in :mod:`kuota.dashboard`. aiohttp and the store clients are
imported only when the command runs (``kuota --help`` stays fast).
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import sys
from typing import Any

from kuota.service import cli

DEFAULT_LISTEN = "127.0.0.1:8080"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dashboard",
        description="Serve a read-only web dashboard: the cohort tree with nominal, borrowed, "
                    "lent and used quota per flavor and resource; every ClusterQueue and "
                    "LocalQueue with pending, reserving and admitted counts; pending workloads "
                    "in admission order with the reason each waits; what holds quota, where; "
                    "member clusters or worker pools; and each workload's history. Pages "
                    "update live (no reload) and every page has a link that can be shared. "
                    "Reads Redis (--redis, default $REDIS_URL) or, with --kubeconfig, the "
                    "kuota objects of a Kubernetes cluster. Nothing is ever written.")
    parser.add_argument("--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
                        type=listen_address,
                        help=f"address to serve on (default {DEFAULT_LISTEN}: this machine "
                             "only; port 0 picks a free one). The pages have no login: bind "
                             "another address only behind an authenticating proxy")
    parser.add_argument("--interval", type=float, default=1.0, metavar="SECONDS",
                        help="how often the store is read for changes (default 1; a large "
                             "store is read no more often than a read takes)")
    cli.add_store_args(parser)
    parser.add_argument("--kubeconfig", metavar="PATH", default=None,
                        help="read the kuota objects of this cluster instead of Redis")
    parser.add_argument("--context", metavar="NAME", default=None,
                        help="kubeconfig context (default: the current one)")
    parser.set_defaults(func=run)


def listen_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT (e.g. {DEFAULT_LISTEN})")
    return host, int(port)


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@cli.handles_errors
def run(args: argparse.Namespace) -> int:
    if args.interval <= 0:
        raise ValueError(f"--interval {args.interval}: must be more than 0 seconds")
    if args.kubeconfig is None and args.context is not None:
        raise ValueError("--context needs --kubeconfig")
    if args.kubeconfig is not None and args.redis is not None:
        raise ValueError("--redis and --kubeconfig: choose one store")
    from kuota.dashboard.server import Dashboard, serve

    source: Any
    if args.kubeconfig is not None:
        from kuota.dashboard.kube_source import KubeSource

        source = KubeSource.connect(args.kubeconfig, args.context)
    else:
        from kuota.dashboard.redis_source import RedisSource

        source = RedisSource(cli.connection(args))
    host, port = args.listen
    if not loopback(host):
        print(f"warning: serving on {host}: anyone who can reach it sees every queue and "
              "workload (the dashboard has no login)", file=sys.stderr)

    def started(url: str) -> None:
        print(f"kuota dashboard: {url} (read-only; {source.description})", flush=True)

    try:
        asyncio.run(serve(Dashboard(source, interval=args.interval), host, port, started))
    except OSError as exc:
        print(f"error: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0
