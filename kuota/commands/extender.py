"""``kuota extender``: serve kube-scheduler's extender protocol (binpack + topology).

Typical use, inside the cluster (see ``manifests/scheduler/``)::

    kuota extender --listen 0.0.0.0:8888 --node-cache \\
        --tls-cert /certs/tls.crt --tls-key /certs/tls.key --client-ca /certs/ca.crt \\
        --probe-listen 0.0.0.0:8081 \\
        --weights nvidia.com/gpu=3,cpu=1,memory=1 \\
        --topology-levels cloud.provider.com/topology-rack,kubernetes.io/hostname

Only kube-scheduler, presenting a client certificate the ``--client-ca``
signed, is served; the kubelet probes ``/healthz`` and ``/readyz`` on the
plain ``--probe-listen`` port, which serves nothing else. Without TLS options
the extender serves plain HTTP, by default on 127.0.0.1 only (a sidecar or
a kube-scheduler on the same host), and warns when told to listen wider.

The score is the weighted mean of a resource score (``--strategy``, kube-
scheduler's formulas over ``--weights``) and, unless ``--topology-weight 0``,
the topology score over ``--topology-levels``. Pods and (with
``--node-cache``) nodes are watched through the in-cluster service account,
or ``--kubeconfig``. Exit status 2 for invalid options.

Requests are bounded (``--max-body``, ``--header-timeout``, ``--read-timeout``;
:class:`kuota.extender.Limits`): the extender runs next to kube-scheduler, and
a caller must not be able to take its memory or hold its connections.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import pathlib
import ssl
import sys
from typing import Any

from aiohttp import web

from kuota import extender as ext
from kuota.operator.certs import ServingCertificate
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
from quota.resources import MILLI, QuantityError, parse_amount, parse_vector

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
    parser.add_argument("--tls-cert", metavar="FILE",
                        help="serve HTTPS with this certificate (re-read when it changes)")
    parser.add_argument("--tls-key", metavar="FILE", help="private key for --tls-cert")
    parser.add_argument("--client-ca", metavar="FILE",
                        help="with --tls-cert: serve only clients presenting a certificate "
                             "this CA signed (mutual TLS; kube-scheduler's extender "
                             "tlsConfig certFile/keyFile); others fail the handshake")
    parser.add_argument("--probe-listen", metavar="HOST:PORT",
                        help="also serve GET /healthz and /readyz, and nothing else, over "
                             "plain HTTP here: for the kubelet's probes, which present no "
                             "client certificate (default: none)")
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
    parser.add_argument("--max-body", default="4Mi", metavar="SIZE",
                        help="largest request body, a quantity such as 4Mi; larger ones get "
                             "413 before they are read (default %(default)s: a Pod and the "
                             "names of 5,000 nodes; full Node objects need --node-cache or more)")
    parser.add_argument("--header-timeout", type=float, default=ext.DEFAULT_HEADER_TIMEOUT,
                        metavar="SECONDS",
                        help="close a connection whose request line and headers have not "
                             "arrived by then, or that stays idle that long (default "
                             "%(default)g)")
    parser.add_argument("--read-timeout", type=float, default=ext.DEFAULT_READ_TIMEOUT,
                        metavar="SECONDS",
                        help="answer 408 to a request whose body has not arrived by then "
                             "(default %(default)g)")
    parser.set_defaults(func=run)


def build_limits(args: argparse.Namespace) -> ext.Limits:
    """The request limits the options name; ValueError naming the flag."""
    try:
        max_body = parse_amount(args.max_body) // MILLI
    except QuantityError as exc:
        raise ValueError(f"--max-body: {exc}") from None
    if max_body < 1024:
        raise ValueError(f"--max-body: {args.max_body} is less than 1Ki")
    for flag, seconds in (("--header-timeout", args.header_timeout),
                          ("--read-timeout", args.read_timeout)):
        if not seconds > 0:
            raise ValueError(f"{flag}: {seconds:g} is not a positive number of seconds")
    return ext.Limits(max_body, args.header_timeout, args.read_timeout)


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


def address(text: str, option: str) -> tuple[str, int]:
    """``HOST:PORT`` (host may be ``[v6]`` or empty for every address) → (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"{option}: {text!r} is not HOST:PORT")
    return host.strip("[]") or "0.0.0.0", int(port)


_TLS_FILES = (("--tls-cert", "tls_cert"), ("--tls-key", "tls_key"), ("--client-ca", "client_ca"))


def serving_certificate(args: argparse.Namespace) -> ServingCertificate | None:
    """The HTTPS certificate the options name, or None for plain HTTP.

    ValueError with a one-line message naming the flag for a missing, unreadable or
    malformed file, and for options that do not go together.
    """
    if not args.tls_cert and not args.tls_key:
        if args.client_ca:
            raise ValueError("--client-ca needs --tls-cert and --tls-key")
        return None
    if not (args.tls_cert and args.tls_key):
        raise ValueError("--tls-cert and --tls-key go together")
    for flag, name in _TLS_FILES:
        path = getattr(args, name)
        if path:
            try:
                pathlib.Path(path).read_bytes()  # small files; the loaders' errors name no file
            except OSError as exc:
                raise ValueError(f"{flag}: cannot read {path}: {exc.strerror}") from None
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(
            args.tls_cert, args.tls_key)
    except ssl.SSLError as exc:
        raise ValueError(f"--tls-cert/--tls-key: {args.tls_cert} and {args.tls_key} are not "
                         f"a PEM certificate and its private key ({exc.reason or exc})") from None
    if args.client_ca:
        try:
            ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_verify_locations(
                cafile=args.client_ca)
        except ssl.SSLError as exc:
            raise ValueError(f"--client-ca: {args.client_ca} holds no PEM CA certificate "
                             f"({exc.reason or exc})") from None
    return ext.serving_certificate(args.tls_cert, args.tls_key, args.client_ca)


def warn_if_open(host: str, certificate: ServingCertificate | None,
                  client_ca: str | None) -> None:
    """Log a warning when callers beyond this host are served without authentication."""
    if host in ("127.0.0.1", "::1", "localhost") or client_ca:
        return
    what = "HTTPS without --client-ca" if certificate else "plain HTTP"
    logging.getLogger("kuota.extender").warning(
        "extender: serving %s on %s: anyone who can reach the port can ask it; "
        "use --tls-cert, --tls-key and --client-ca (docs/placement.md)", what, host)


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
        host, port = address(args.listen, "--listen")
        probes = address(args.probe_listen, "--probe-listen") if args.probe_listen else None
        settings = build_settings(args)
        limits = build_limits(args)
        certificate = serving_certificate(args)
        api = _core_api(args.kubeconfig)
    except (ValueError, ModelError, OSError) as exc:
        print(f"kuota extender: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # kubernetes.config raises its own ConfigException
        print(f"kuota extender: no cluster access: {exc}", file=sys.stderr)
        return 2
    warn_if_open(host, certificate, args.client_ca)
    cache = ClusterCache()
    extender = ext.Extender(settings, cache)
    app = ext.make_app(extender, limits)

    async def start_watches(_: Any) -> None:
        feeder = ext.CacheFeeder(cache, settings.gang_labels)
        ext.KubeWatcher(feeder, asyncio.get_running_loop(), api,
                        watch_nodes=args.node_cache).start()

    app.on_startup.append(start_watches)
    if probes is not None:
        app.cleanup_ctx.append(ext.serving_alongside(ext.make_probe_app(extender, limits),
                                                     *probes))
    if certificate is not None:
        app.cleanup_ctx.append(ext.running(lambda: ext.follow_certificate(certificate)))
    web.run_app(app, host=host, port=port,
                ssl_context=certificate.context if certificate else None, print=None,
                **limits.server_options())
    return 0
