"""``kuota extender``: serve kube-scheduler's extender protocol (binpack + topology).

Typical use, inside the cluster (see ``manifests/scheduler/``)::

    kuota extender --listen 0.0.0.0:8888 --node-cache \\
        --weights nvidia.com/gpu=3,cpu=1,memory=1 \\
        --topology-levels cloud.provider.com/topology-rack,kubernetes.io/hostname

The score is the weighted mean of a resource score (``--strategy``, kube-
scheduler's formulas over ``--weights``) and, unless ``--topology-weight 0``,
the topology score over ``--topology-levels``. Pods and (with
``--node-cache``) nodes are watched through the in-cluster service account,
or ``--kubeconfig``. Exit status 2 for invalid options.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import ssl
import sys
from typing import Any

from aiohttp import web

from kuota import extender as ext
from placement.cache import ClusterCache
from placement.memo import MemoizedScorer
from placement.model import ModelError
from placement.scoring import (
    BINPACK_SHAPE,
    ResourceAllocationScorer,
    ResourceSpec,
    Scorer,
    ShapePoint,
    Strategy,
    WeightedScorer,
)
from placement.topology import Topology, TopologyScorer
from quota.resources import MILLI, QuantityError, parse_vector

DEFAULT_WEIGHTS = "nvidia.com/gpu=3,cpu=1,memory=1"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "extender",
        description="Serve kube-scheduler's HTTP extender protocol: POST /filter, "
                    "POST /prioritize, GET /healthz, GET /readyz.")
    parser.add_argument("--listen", default="127.0.0.1:8888", metavar="HOST:PORT",
                        help="address to serve on (default %(default)s)")
    parser.add_argument("--node-cache", action="store_true",
                        help="nodeCacheCapable mode: watch nodes and accept NodeNames")
    parser.add_argument("--tls-cert", metavar="FILE", help="serve HTTPS with this certificate")
    parser.add_argument("--tls-key", metavar="FILE", help="private key for --tls-cert")
    parser.add_argument("--strategy", choices=[s.value for s in Strategy],
                        default=Strategy.MOST_ALLOCATED.value,
                        help="resource scoring strategy (default %(default)s)")
    parser.add_argument("--weights", default=DEFAULT_WEIGHTS, metavar="RES=W,...",
                        help="per-resource weights, 1..100 (default %(default)s)")
    parser.add_argument("--shape", default="0=0,100=10", metavar="UTIL=SCORE,...",
                        help="RequestedToCapacityRatio shape, utilisation 0..100 to "
                             "score 0..10 (default %(default)s)")
    parser.add_argument("--topology-levels", default="kubernetes.io/hostname",
                        metavar="LABEL,...", help="node labels, widest first "
                                                  "(default %(default)s)")
    parser.add_argument("--topology-weight", type=int, default=1, metavar="N",
                        help="weight of the topology score against the resource score "
                             "(weight 1); 0 disables it (default %(default)s)")
    parser.add_argument("--scheduler-name", action="append", metavar="NAME",
                        help="answer only for pods with this spec.schedulerName (repeatable; "
                             f"default {ext.DEFAULT_SCHEDULER_NAME}; '*' for every pod)")
    parser.add_argument("--gang-label", action="append", metavar="LABEL",
                        help="pod label naming the gang (repeatable, first present wins; "
                             f"default {', '.join(ext.DEFAULT_GANG_LABELS)})")
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="kubeconfig to use outside the cluster")
    parser.set_defaults(func=run)


def _pairs(text: str, option: str) -> list[tuple[str, str]]:
    pairs = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep or not name:
            raise ValueError(f"{option}: {part!r} is not NAME=VALUE")
        pairs.append((name.strip(), value.strip()))
    return pairs


def build_scorer(args: argparse.Namespace) -> Scorer:
    """The scorer the options describe; ValueError/ModelError on bad options."""
    try:
        weights = parse_vector(args.weights)
    except QuantityError as exc:
        raise ValueError(f"--weights: {exc}") from None
    for name, amount in weights.items():
        if amount % MILLI:
            raise ValueError(f"--weights: {name} needs a whole-number weight")
    resources = tuple(ResourceSpec(name, amount // MILLI) for name, amount in weights.items())
    strategy = Strategy(args.strategy)
    shape: tuple[ShapePoint, ...] = ()
    if strategy is Strategy.REQUESTED_TO_CAPACITY_RATIO:
        try:
            shape = tuple(ShapePoint(int(u), int(s)) for u, s in _pairs(args.shape, "--shape"))
        except ValueError as exc:
            raise ValueError(f"--shape: {exc}") from None
        shape = shape or BINPACK_SHAPE
    # Resource scores depend on (pod, node) alone, so equivalent pods reuse them.
    resource_scorer = MemoizedScorer(ResourceAllocationScorer(strategy, resources, shape))
    if args.topology_weight == 0:
        return resource_scorer
    levels = tuple(filter(None, (p.strip() for p in args.topology_levels.split(","))))
    topology = TopologyScorer(Topology(levels))
    return WeightedScorer(((resource_scorer, 1), (topology, args.topology_weight)))


def build_settings(args: argparse.Namespace) -> ext.ExtenderSettings:
    names = args.scheduler_name or [ext.DEFAULT_SCHEDULER_NAME]
    return ext.ExtenderSettings(
        scorer=build_scorer(args),
        scheduler_names=frozenset() if "*" in names else frozenset(names),
        gang_labels=tuple(args.gang_label or ext.DEFAULT_GANG_LABELS),
    )


def _ssl_context(args: argparse.Namespace) -> ssl.SSLContext | None:
    if not args.tls_cert and not args.tls_key:
        return None
    if not (args.tls_cert and args.tls_key):
        raise ValueError("--tls-cert and --tls-key go together")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(args.tls_cert, args.tls_key)
    return context


def _core_api(kubeconfig: str | None) -> Any:
    from kubernetes import client, config

    # The kubernetes client's config loaders carry no type hints.
    if kubeconfig:
        config.load_kube_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    else:
        try:
            config.load_incluster_config()  # type: ignore[no-untyped-call]
        except config.ConfigException:
            config.load_kube_config()  # type: ignore[no-untyped-call]
    return client.CoreV1Api()


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        host, sep, port = args.listen.rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"--listen: {args.listen!r} is not HOST:PORT")
        settings = build_settings(args)
        context = _ssl_context(args)
        api = _core_api(args.kubeconfig)
    except (ValueError, ModelError, OSError) as exc:
        print(f"kuota extender: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # kubernetes.config raises its own ConfigException
        print(f"kuota extender: no cluster access: {exc}", file=sys.stderr)
        return 2
    cache = ClusterCache()
    app = ext.make_app(ext.Extender(settings, cache))

    async def start_watches(_: Any) -> None:
        feeder = ext.CacheFeeder(cache, settings.gang_labels)
        ext.KubeWatcher(feeder, asyncio.get_running_loop(), api,
                        watch_nodes=args.node_cache).start()

    app.on_startup.append(start_watches)
    web.run_app(app, host=host.strip("[]") or "0.0.0.0", port=int(port),
                    ssl_context=context, print=None)
    return 0
