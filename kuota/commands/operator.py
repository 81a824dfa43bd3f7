"""``kuota operator``: run the Kubernetes operator (kopf) for queue-labelled Jobs.

Typical use, inside the cluster (see ``manifests/operator/``)::

    kuota operator --webhook-listen 0.0.0.0:9443 --webhook-cert-dir /certs \\
        --probes 0.0.0.0:8080 --lease kuota-system/kuota-operator

Outside the cluster (a workstation, ``make sandbox``)::

    kuota operator --kubeconfig ~/.kube/config --context dev --lease none \
        --webhook-listen 127.0.0.1:9443 --webhook-secret kuota-system/kuota-webhook-tls \
        --visibility-listen 127.0.0.1:8082

Credentials come from ``--kubeconfig``/``--context`` when given
(:mod:`kuota.operator.kubeconfig`), else the pod's service account, else
``$KUBECONFIG`` / ``~/.kube/config``. ``--webhook-secret`` reads the serving
certificate from the chart's Secret and follows its renewals
(:mod:`kuota.operator.secretcerts`) instead of a mounted directory.
``--namespace`` (repeatable) limits the Jobs and Workloads managed; without it
the operator is cluster-wide. ``--config FILE`` reads Kueue's own Configuration
file (:mod:`kuota.operator.kueue_config`): each field it sets is honoured —
as the flag it maps onto, where that flag is not given on the command line
(flags win) — or refused. Exit status 2 for invalid options, naming the flag,
or the file and its field.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import logging
import math
import os
import pathlib
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import kopf

from kuota import gctuning
from kuota.operator import kubeconfig, kueue_config, names, secretcerts
from kuota.operator.handlers import VisibilityOptions, WebhookOptions, build_registry
from kuota.operator.loop import Operator
from kuota.operator.settings import Options
from quota.config import EngineConfig, PodsReadyConfig


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


def _seconds(*, positive: bool) -> Callable[[str], float]:
    """An argparse type: a number of seconds, > 0 (``positive``) or >= 0."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}"
                                             ) from None
        if not math.isfinite(value) or value < 0 or (positive and value == 0):
            raise argparse.ArgumentTypeError(
                f"must be {'> 0' if positive else '>= 0'} seconds, got {text!r}")
        return value

    return parse


def _at_least_one(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def _file(text: str) -> str:
    """An argparse type: a file that exists."""
    if not pathlib.Path(text).expanduser().is_file():
        raise argparse.ArgumentTypeError(f"no such file: {text!r}")
    return str(pathlib.Path(text).expanduser())


#: Flags a Kueue Configuration may set (their argparse default is None, so that a flag given
#: on the command line is told from one not given) with their defaults.
_DEFAULTS: dict[str, Any] = {"default_queue": False, "lease": "kuota-system/kuota-operator",
                             "fair_sharing": False, "manager_id": "kuota",
                             "operator_namespace": "kuota-system"}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "operator",
        description="Admit queue-labelled Jobs through kuota's queues: watch the kuota.dev "
                    "objects, Jobs and Workloads, run admission cycles, write decisions.")
    parser.add_argument("--namespace", "-n", action="append", default=[], metavar="NS",
                        help="manage Jobs and Workloads only in NS (repeatable; default: all)")
    parser.add_argument("--config", type=_file, metavar="FILE",
                        help="read Kueue's Configuration file (config.kueue.x-k8s.io "
                             "v1beta1 or v1beta2): each field is honoured or refused by name "
                             "(exit 2); flags given on the command line win over the file")
    parser.add_argument("--default-queue", action="store_true", default=None,
                        help="submit unlabelled Jobs to the namespace's LocalQueue 'default' "
                             "(Kueue's feature gate LocalQueueDefaulting)")
    parser.add_argument("--api", choices=("kuota", "kueue"), default="kuota",
                        help="the API group of the queue objects and Workloads: kuota "
                             "(kuota.dev/v1alpha1, the default) or kueue (Kueue's own "
                             "kueue.x-k8s.io/v1beta2, with the CRDs of manifests/kueue; "
                             "refuses to start where Kueue runs)")
    parser.add_argument("--kubeconfig", type=_file, metavar="PATH",
                        help="log in with this kubeconfig (outside the cluster); default: the "
                             "pod's service account, else $KUBECONFIG or ~/.kube/config")
    parser.add_argument("--context", metavar="NAME",
                        help="the kubeconfig's context to use (default: its current context)")
    parser.add_argument("--lease", metavar="NS/NAME",
                        help="Lease for leader election (default "
                             "kuota-system/kuota-operator); 'none' to run as the only replica")
    parser.add_argument("--webhook-listen", type=_address, metavar="HOST:PORT",
                        help="serve the Job-suspending webhook over HTTPS here")
    parser.add_argument("--webhook-cert-dir", type=pathlib.Path, metavar="DIR",
                        help="directory with tls.crt and tls.key, and optionally ca.crt (e.g. "
                             "a mounted cert-manager Secret); renewals are taken up without "
                             "a restart")
    parser.add_argument("--webhook-secret", type=secretcerts.reference,
                        metavar="NAMESPACE/NAME",
                        help="read tls.crt, tls.key and ca.crt from this Secret (e.g. the "
                             "chart's kuota-system/kuota-webhook-tls) instead of "
                             "--webhook-cert-dir, and again every 10 s, so renewals are taken "
                             "up: for an operator outside the cluster")
    parser.add_argument("--webhook-managed", metavar="NAME",
                        help="let kopf keep the webhook configuration NAME up to date "
                             "(instead of the one in manifests/)")
    parser.add_argument("--webhook-host", metavar="HOST",
                        help="host name for a managed webhook configuration's URL")
    parser.add_argument("--visibility-listen", type=_address, metavar="HOST:PORT",
                        help="serve the visibility.kuota.dev API (pending positions, behind "
                             "the APIService v1beta2.visibility.kuota.dev) over HTTPS here")
    parser.add_argument("--visibility-cert-dir", type=pathlib.Path, metavar="DIR",
                        help="directory with the visibility server's tls.crt and tls.key "
                             "(default: those of --webhook-cert-dir or --webhook-secret); "
                             "renewals are taken up")
    parser.add_argument("--probes", type=_address, metavar="HOST:PORT",
                        help="serve /healthz, /readyz and /metrics here")
    parser.add_argument("--pods-ready-timeout", type=float, metavar="SECONDS",
                        help="waitForPodsReady: evict admitted Jobs whose pods are not ready "
                             "within SECONDS")
    parser.add_argument("--fair-sharing", action="store_true", default=None,
                        help="enable fair sharing")
    parser.add_argument("--status-interval", type=float, default=1.0, metavar="SECONDS",
                        help="how often queue statuses and why waiting workloads wait are "
                             "written (default %(default)s); the reasons go through a few "
                             "write slots of their own, never ahead of admissions")
    parser.add_argument("--manager-id", metavar="ID",
                        help="multi-cluster: this manager's id, the kuota.dev/origin label of "
                             "the Jobs it creates in member clusters (default kuota)")
    parser.add_argument("--member-interval", type=_seconds(positive=True), default=10.0,
                        metavar="SECONDS",
                        help="multi-cluster: how often each member cluster is observed "
                             "(default %(default)s)")
    parser.add_argument("--create-backoff", type=_seconds(positive=False), default=5.0,
                        metavar="SECONDS",
                        help="multi-cluster: pause after a copy's creation failed, doubled "
                             "with each further failure (default %(default)s)")
    parser.add_argument("--create-attempts", type=_at_least_one, default=5, metavar="N",
                        help="multi-cluster: failed creations after which a member counts as "
                             "refusing the workload, which is then evicted and dispatched "
                             "elsewhere (default %(default)s)")
    parser.add_argument("--operator-namespace", metavar="NS",
                        help="where MemberCluster kubeconfig Secrets are read "
                             "(default kuota-system)")
    parser.add_argument("--redis", metavar="URL",
                        help="multi-cluster: Redis for the queue of remote calls (default: "
                             "$REDIS_URL, else an in-process store); pool members "
                             "(MemberCluster spec.pool) are pools of workers registered there")
    parser.add_argument("--pool-prefix", default=os.environ.get("KUOTA_PREFIX", "kuota"),
                        metavar="PREFIX",
                        help="multi-cluster: key prefix of the Redis-mode store pool members "
                             "live in (default: $KUOTA_PREFIX, else %(default)s)")
    parser.add_argument("--verbose", "-v", action="store_true", help="debug logging")
    parser.set_defaults(func=run)


def kueue_settings(args: argparse.Namespace) -> kueue_config.KueueSettings | None:
    """The ``--config`` file's settings; :class:`_Usage` naming the file and its fields."""
    if getattr(args, "config", None) is None:
        return None
    try:
        return kueue_config.load(args.config)
    except kueue_config.ConfigError as exc:
        raise _Usage(f"--config {exc}") from None


def with_config(args: argparse.Namespace,
                settings: kueue_config.KueueSettings | None) -> argparse.Namespace:
    """``args`` with the file's values for the flags not given, then the defaults."""
    merged = argparse.Namespace(**vars(args))
    for dest, value in (settings.flags.items() if settings is not None else ()):
        if dest == "webhook_cert_dir" and getattr(merged, "webhook_secret", None) is not None:
            continue  # (--webhook-secret given: the certificate comes from it)
        if getattr(merged, dest, None) is None:
            setattr(merged, dest, value)
    for dest, default in _DEFAULTS.items():
        if getattr(merged, dest, None) is None:
            setattr(merged, dest, default)
    return merged


def options_from(args: argparse.Namespace,
                 settings: kueue_config.KueueSettings | None = None) -> Options:
    args = with_config(args, settings)
    ready = None
    if args.pods_ready_timeout is not None:
        base = settings.pods_ready if settings is not None else None
        ready = dataclasses.replace(base or PodsReadyConfig(), timeout=args.pods_ready_timeout)
    lease_ns, lease_name = "kuota-system", None
    if args.lease and args.lease != "none":
        lease_ns, _, lease_name = args.lease.rpartition("/")
        lease_ns = lease_ns or "kuota-system"
    extra: dict[str, Any] = {}
    if settings is not None:
        extra = {"frameworks": settings.frameworks, "pod_namespaces": settings.pod_namespaces}
        if settings.lease_duration is not None:
            extra["lease_duration"] = settings.lease_duration
        if settings.lease_renew is not None:
            extra["lease_renew"] = settings.lease_renew
    return Options(namespaces=tuple(args.namespace), default_queue=args.default_queue,
                   engine=EngineConfig(fair_sharing=args.fair_sharing,
                                       wait_for_pods_ready=ready),
                   status_interval=args.status_interval, lease_name=lease_name,
                   lease_namespace=lease_ns, manager_id=args.manager_id,
                   member_interval=args.member_interval,
                   create_backoff=args.create_backoff, create_attempts=args.create_attempts,
                   operator_namespace=args.operator_namespace,
                   redis_url=args.redis or os.environ.get("REDIS_URL") or None,
                   pool_prefix=args.pool_prefix, pod=_own_pod(), **extra)


def _own_pod() -> tuple[str, str] | None:
    namespace, name = os.environ.get("POD_NAMESPACE"), os.environ.get("POD_NAME")
    return (namespace, name) if namespace and name else None


class _Usage(ValueError):
    """Options that cannot work together (exit status 2); the message names the flags."""


def _webhook_options(args: argparse.Namespace) -> WebhookOptions | None:
    """The webhook server's options, or :class:`_Usage` naming what is missing."""
    if args.webhook_listen is None:
        return None
    cert = key = ca = None
    if args.webhook_cert_dir is not None:
        cert, key = args.webhook_cert_dir / "tls.crt", args.webhook_cert_dir / "tls.key"
        if not cert.exists() or not key.exists():
            raise _Usage(f"--webhook-cert-dir {args.webhook_cert_dir} needs tls.crt and tls.key")
        if (args.webhook_cert_dir / "ca.crt").exists():
            ca = args.webhook_cert_dir / "ca.crt"
    addr, port = args.webhook_listen
    return WebhookOptions(addr=addr, port=port, certfile=str(cert) if cert else None,
                          pkeyfile=str(key) if key else None,
                          cafile=str(ca) if ca else None, host=args.webhook_host,
                          managed=args.webhook_managed)


def _visibility_options(args: argparse.Namespace) -> VisibilityOptions | None:
    if args.visibility_listen is None:
        return None
    cert_dir = args.visibility_cert_dir or args.webhook_cert_dir
    if cert_dir is None or not (cert_dir / "tls.crt").exists() \
            or not (cert_dir / "tls.key").exists():
        raise _Usage("--visibility-listen needs --visibility-cert-dir (or --webhook-cert-dir, "
                     "or --webhook-secret) with tls.crt and tls.key")
    addr, port = args.visibility_listen
    return VisibilityOptions(addr, port, str(cert_dir / "tls.crt"), str(cert_dir / "tls.key"))


def _login_source(args: argparse.Namespace) -> kubeconfig.Source | None:
    """Where to log in from when ``--kubeconfig``/``--context`` are given; read once now, so
    a missing file or context is a usage error at start."""
    if args.kubeconfig is None and args.context is None:
        return None
    source = kubeconfig.Source(args.kubeconfig, args.context)
    try:
        kubeconfig.connection(source)
    except kubeconfig.KubeconfigError as exc:
        raise _Usage(str(exc)) from None
    return source


@contextmanager
def _secret_certificates(args: argparse.Namespace,
                         source: kubeconfig.Source | None) -> Iterator[None]:
    """With ``--webhook-secret``: the Secret mirrored into a private directory, which
    becomes ``--webhook-cert-dir`` while the operator runs (removed afterwards)."""
    if args.webhook_secret is None:
        yield
        return
    if args.webhook_cert_dir is not None:
        raise _Usage("--webhook-secret and --webhook-cert-dir: give one of them")
    if args.webhook_listen is None and args.visibility_listen is None:
        raise _Usage("--webhook-secret needs --webhook-listen or --visibility-listen")
    namespace, name = args.webhook_secret
    try:
        api = kubeconfig.api_client(source)
    except kubeconfig.KubeconfigError as exc:
        raise secretcerts.SecretError(f"no credentials to read it with: {exc}") from None
    directory = pathlib.Path(tempfile.mkdtemp(prefix="kuota-webhook-"))
    mirror = secretcerts.SecretMirror(secretcerts.secret_reader(api, namespace, name),
                                      f"{namespace}/{name}", directory)
    try:
        mirror.refresh()
        args.webhook_cert_dir = directory
        mirror.start()
        yield
    finally:
        mirror.stop()
        api.close()
        shutil.rmtree(directory, ignore_errors=True)


def _fail(message: str, status: int) -> int:
    print(f"kuota operator: {message}", file=sys.stderr)
    return status


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    gctuning.tune()
    try:
        settings = kueue_settings(args)
        args = with_config(args, settings)
        source = _login_source(args)
        with _secret_certificates(args, source):
            webhook, visibility = _webhook_options(args), _visibility_options(args)
            _run_operator(args, source, webhook, visibility, settings)
    except _Usage as exc:
        return _fail(str(exc), 2)
    except secretcerts.SecretError as exc:
        return _fail(f"--webhook-secret: {exc}", 1)
    return 0


def _run_operator(args: argparse.Namespace, source: kubeconfig.Source | None,
                  webhook: WebhookOptions | None, visibility: VisibilityOptions | None,
                  settings: kueue_config.KueueSettings | None) -> None:
    names.serve(args.api)
    operator = Operator(options_from(args, settings))
    login = functools.partial(kubeconfig.connection, source) if source is not None else None
    registry = build_registry(operator, webhook=webhook, probe_addr=args.probes,
                              visibility=visibility, login_with=login)
    namespaces = list(args.namespace)
    asyncio.run(kopf.operator(registry=registry, standalone=True,
                              clusterwide=not namespaces, namespaces=namespaces))
