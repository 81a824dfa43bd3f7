"""``kuota why WORKLOAD`` and ``kuota describe workload WORKLOAD`` — why it waits, where it runs.

Explains a workload from an engine rebuilt as a new leader would, from Redis
(``--redis``, default ``REDIS_URL``) or from the kuota objects of a Kubernetes cluster
(``--kubeconfig``), with the text every surface shows (:mod:`kuota.explanation`):
what it needs and what is free at each level of its cohort tree, who borrows it, what
the preemption policy allows, its position, what would make it fit, and for a
multi-cluster workload its dispatch decision. Exit status: 0 shown, 1 not found or
unreachable, 2 invalid input.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from kuota import explanation
from kuota.explanation import WorkloadView
from kuota.service import cli, submission

if TYPE_CHECKING:
    from admission.engine import Engine

SOURCES = ("Sources: --redis URL (default $REDIS_URL, else the embedded store) reads the store "
           "the Redis scheduler keeps; --kubeconfig PATH [--context NAME] reads the kuota "
           "objects of a cluster run by `kuota operator`.")
WHAT = ("what it needs per pod set and resource, what is free at each level of its cohort "
        "tree, who holds the part others borrow, whether its ClusterQueue's preemption policy "
        "(reclaimWithinCohort, withinClusterQueue, borrowWithinCohort) lets it take quota "
        "back, its position (or that it is set aside, blocking no one, as it can never fit), "
        "and what would make it fit; for a multi-cluster workload only, its dispatch "
        "decision: the chosen member, every feasible member's scores and every member a "
        "filter refused, with the reason.")


def register(subparsers: Any) -> None:
    why = subparsers.add_parser(
        "why",
        description="Why a workload waits, or where it runs, from the scheduler's own state: "
                    + WHAT + " " + SOURCES)
    _add_args(why)
    why.set_defaults(func=run_why)
    describe = subparsers.add_parser(
        "describe",
        description="Status of a workload (state, reason, message, cluster queue, flavors, "
                    "requests, command, nodes) followed by the same explanation as "
                    "`kuota why`. " + SOURCES)
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
        loaded = _load(args)
        if loaded is None:
            return 1
        view, engine = loaded
        if args.output == "json":
            cli.print_json({"workload": view.key, "state": view.state, "reason": view.reason,
                            "message": view.message, "cluster": view.cluster,
                            "dispatch": view.decision})
            return 0
        explanation.decision_of(view)  # a malformed decision is an error, not a half table
        sys.stdout.write(render(view, engine))
        return 0

    return inner(args)


def _load(args: argparse.Namespace) -> tuple[WorkloadView, Engine | None] | None:
    namespace, name = submission.split_key(args.workload)
    if args.kubeconfig is None and args.context is not None:
        raise ValueError("--context needs --kubeconfig")
    if args.kubeconfig is not None:
        return _from_cluster(args.kubeconfig, args.context, namespace, name)
    store = cli.client(args).store
    record = store.workloads.get(f"{namespace}/{name}")
    from kuota.service import rebuild  # (the engine, once there is a workload to explain)

    return explanation.from_record(record), rebuild.load(store).engine


def _from_cluster(kubeconfig: str, context: str | None, namespace: str,
                  name: str) -> tuple[WorkloadView, Engine | None] | None:
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    from kuota.dashboard.kube_source import KubeSource

    source = KubeSource.connect(kubeconfig, context)
    try:
        page = source.workload(f"{namespace}/{name}", source.overview())
    except ApiException as exc:
        print(f"error: reading Workload {namespace}/{name}: {exc.status} {exc.reason}",
              file=sys.stderr)
        return None
    except HTTPError as exc:
        print(f"error: cannot reach the cluster of {kubeconfig}: {exc}", file=sys.stderr)
        return None
    finally:
        source.api_client.close()
    if page is None:
        print(f"error: Workload {namespace}/{name} not found", file=sys.stderr)
        return None
    return page.facts.view, page.engine
