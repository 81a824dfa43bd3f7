"""``kuota why WORKLOAD`` and ``kuota describe workload WORKLOAD`` — where it went, and why.

Reads the workload's multi-cluster dispatch decision from Redis (``--redis``,
default ``REDIS_URL``) or from the Workload object of a Kubernetes cluster
(``--kubeconfig``); see :mod:`kuota.explanation`. Exit status: 0 shown
(including "no decision yet"), 1 not found or unreachable, 2 invalid input.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kuota import explanation
from kuota.explanation import WorkloadView
from kuota.service import cli, submission
from quota import api
from quota.api.base import GROUP, VERSION

SOURCES = ("Sources: --redis URL (default $REDIS_URL, else the embedded store) reads the record "
           "the Redis scheduler keeps; --kubeconfig PATH [--context NAME] reads the Workload "
           "object's status.dispatch from a cluster run by `kuota operator`.")


def register(subparsers: Any) -> None:
    why = subparsers.add_parser(
        "why",
        description="Show the multi-cluster dispatch decision of a workload: the chosen "
                    "member, every feasible member's scores (plugin score × weight, raw "
                    "figure) and every member a filter refused, with the reason. A workload "
                    "without a decision is explained too: still pending (with its pending "
                    "message), or its ClusterQueue has no kuota.dev/multicluster check. "
                    + SOURCES)
    _add_args(why)
    why.set_defaults(func=run_why)
    describe = subparsers.add_parser(
        "describe",
        description="Status of a workload (state, reason, message, cluster queue, flavors, "
                    "nodes) followed by the same explanation as `kuota why`. " + SOURCES)
    describe.add_argument("kind", choices=("workload", "workloads", "wl"), metavar="KIND",
                          help="workload (wl)")
    _add_args(describe)
    describe.set_defaults(func=run_describe)


def _add_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workload", metavar="WORKLOAD",
                        help="NAMESPACE/NAME, or NAME in namespace default")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text",
                        help="json: the stored decision as is (null when there is none)")
    cli.add_store_args(parser)
    parser.add_argument("--kubeconfig", metavar="PATH", default=None,
                        help="read the Workload object from this cluster instead of Redis")
    parser.add_argument("--context", metavar="NAME", default=None,
                        help="kubeconfig context (default: the current one)")


def run_why(args: argparse.Namespace) -> int:
    return _run(args, explanation.why)


def run_describe(args: argparse.Namespace) -> int:
    return _run(args, explanation.describe)


def _run(args: argparse.Namespace, render: Any) -> int:
    @cli.handles_errors
    def inner(args: argparse.Namespace) -> int:
        view = _load(args)
        if view is None:
            return 1
        if args.output == "json":
            cli.print_json({"workload": view.key, "state": view.state, "reason": view.reason,
                            "message": view.message, "cluster": view.cluster,
                            "dispatch": view.decision})
            return 0
        explanation.decision_of(view)  # a malformed decision is an error, not a half table
        sys.stdout.write(render(view))
        return 0

    return inner(args)


def _load(args: argparse.Namespace) -> WorkloadView | None:
    namespace, name = submission.split_key(args.workload)
    if args.kubeconfig is None and args.context is not None:
        raise ValueError("--context needs --kubeconfig")
    if args.kubeconfig is not None:
        return _from_cluster(args.kubeconfig, args.context, namespace, name)
    client = cli.client(args)
    return explanation.from_record(client.store.workloads.get(f"{namespace}/{name}"))


def _from_cluster(kubeconfig: str, context: str | None, namespace: str,
                  name: str) -> WorkloadView | None:
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        api_client = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, context=context)
    except (config.ConfigException, OSError) as exc:
        raise ValueError(f"--kubeconfig {kubeconfig}: {exc}") from None
    try:
        obj = client.CustomObjectsApi(api_client).get_namespaced_custom_object(
            GROUP, VERSION, namespace, "workloads", name)
    except ApiException as exc:
        if exc.status == 404:
            print(f"error: Workload {namespace}/{name} not found", file=sys.stderr)
        else:
            print(f"error: reading Workload {namespace}/{name}: {exc.status} {exc.reason}",
                  file=sys.stderr)
        return None
    except HTTPError as exc:
        print(f"error: cannot reach the cluster of {kubeconfig}: {exc}", file=sys.stderr)
        return None
    finally:
        api_client.close()
    if not isinstance(obj, dict):
        raise ValueError(f"{namespace}/{name}: the API returned no object")
    workload = api.parse_object(obj, source=f"Workload {namespace}/{name}")
    if not isinstance(workload, api.Workload):
        raise ValueError(f"{namespace}/{name}: the API returned a {workload.kind}")
    return explanation.from_object(workload)

