"""``kubectl kuota``: kueuectl's everyday verbs for kuota's objects.

Installed as the console script ``kubectl-kuota``, so kubectl finds it on PATH and runs
it for ``kubectl kuota ...``. It reads the kubeconfig as kubectl does (``--kubeconfig``,
else ``$KUBECONFIG``, else ``~/.kube/config``; ``--context``) and talks to the API server
with the same credentials.

    kubectl kuota list clusterqueues                 # name, cohort, pending, admitted, stop
    kubectl kuota list localqueues [-n NS | -A]
    kubectl kuota list workloads [-n NS | -A] [--clusterqueue CQ] [--localqueue LQ]
                                 [--status pending|admitted|finished]
    kubectl kuota stop clusterqueue NAME [--keep-already-running]   # HoldAndDrain / Hold
    kubectl kuota resume clusterqueue NAME
    kubectl kuota stop localqueue NAME -n NS [--keep-already-running]
    kubectl kuota stop workload NAME -n NS           # spec.active: false (evicted if running)
    kubectl kuota resume workload NAME -n NS

Stopping follows Kueue's ``stopPolicy``: ``HoldAndDrain`` (default here, as in
kueuectl) also evicts what runs; ``--keep-already-running`` sets ``Hold``, which only
stops new admissions.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

GROUP, VERSION = "kuota.dev", "v1alpha1"
PLURALS = {"clusterqueue": "clusterqueues", "clusterqueues": "clusterqueues",
           "cq": "clusterqueues", "localqueue": "localqueues", "localqueues": "localqueues",
           "lq": "localqueues", "workload": "workloads", "workloads": "workloads",
           "wl": "workloads"}
NAMESPACED = {"localqueues", "workloads"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kubectl kuota", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig file (as kubectl)")
    parser.add_argument("--context", default=None, help="kubeconfig context (as kubectl)")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    listing = verbs.add_parser("list", help="list ClusterQueues, LocalQueues or Workloads")
    listing.add_argument("kind", choices=sorted(PLURALS))
    _namespace_args(listing)
    listing.add_argument("--clusterqueue", "-c", default=None,
                         help="workloads: only those reserved in / queued for this ClusterQueue")
    listing.add_argument("--localqueue", "-q", default=None,
                         help="workloads: only those of this LocalQueue")
    listing.add_argument("--status", choices=("pending", "admitted", "finished"), default=None,
                         help="workloads: only those in this state")
    for verb, text in (("stop", "stop admitting to a queue, or deactivate a workload"),
                       ("resume", "undo stop")):
        sub = verbs.add_parser(verb, help=text)
        sub.add_argument("kind", choices=sorted(PLURALS))
        sub.add_argument("name")
        _namespace_args(sub)
        if verb == "stop":
            sub.add_argument("--keep-already-running", action="store_true",
                             help="queues: Hold (stop new admissions only) instead of "
                                  "HoldAndDrain (also evict what runs)")
    return parser


def _namespace_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--namespace", "-n", default=None,
                        help="namespace (default: the context's, else default)")
    parser.add_argument("--all-namespaces", "-A", action="store_true",
                        help="list across all namespaces")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from kubernetes import client, config  # here: --help must not pay for it

    try:
        api_client = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=args.kubeconfig, context=args.context)
        _, active = config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
            config_file=args.kubeconfig)
    except (config.ConfigException, OSError) as exc:
        print(f"error: kubeconfig: {exc}", file=sys.stderr)
        return 1
    namespace = args.namespace or (active or {}).get("context", {}).get("namespace", "default")
    api = client.CustomObjectsApi(api_client)
    plural = PLURALS[args.kind]
    try:
        if args.verb == "list":
            return _list(api, plural, None if args.all_namespaces else namespace, args)
        return _stop_or_resume(api, plural, args.name, namespace, args)
    except client.ApiException as exc:
        print(f"error: {plural} {getattr(args, 'name', '')}: {exc.status} {exc.reason}",
              file=sys.stderr)
        return 1


def _items(api: Any, plural: str, namespace: str | None) -> list[dict[str, Any]]:
    if plural not in NAMESPACED or namespace is None:
        found = api.list_cluster_custom_object(GROUP, VERSION, plural)
    else:
        found = api.list_namespaced_custom_object(GROUP, VERSION, namespace, plural)
    return sorted(found.get("items", []), key=lambda o: (
        o["metadata"].get("namespace", ""), o["metadata"]["name"]))


def rows(plural: str, items: list[dict[str, Any]], *, clusterqueue: str | None = None,
         localqueue: str | None = None, status: str | None = None) -> list[list[str]]:
    """The table for ``items`` (header first), filters applied; pure, for tests."""
    if plural == "clusterqueues":
        out = [["NAME", "COHORT", "PENDING", "ADMITTED", "STOP"]]
        for o in items:
            spec, st = o.get("spec", {}), o.get("status", {})
            out.append([o["metadata"]["name"], spec.get("cohortName", ""),
                        str(st.get("pendingWorkloads", 0)), str(st.get("admittedWorkloads", 0)),
                        spec.get("stopPolicy", "None")])
        return out
    if plural == "localqueues":
        out = [["NAMESPACE", "NAME", "CLUSTERQUEUE", "PENDING", "ADMITTED", "STOP"]]
        for o in items:
            spec, st = o.get("spec", {}), o.get("status", {})
            out.append([o["metadata"].get("namespace", ""), o["metadata"]["name"],
                        spec.get("clusterQueue", ""), str(st.get("pendingWorkloads", 0)),
                        str(st.get("admittedWorkloads", 0)), spec.get("stopPolicy", "None")])
        return out
    out = [["NAMESPACE", "NAME", "LOCALQUEUE", "CLUSTERQUEUE", "STATUS", "ACTIVE"]]
    for o in items:
        spec, st = o.get("spec", {}), o.get("status", {})
        cq = (st.get("admission") or {}).get("clusterQueue", "")
        state = _state(st)
        if ((clusterqueue and cq != clusterqueue)
                or (localqueue and spec.get("queueName") != localqueue)
                or (status and state != status)):
            continue
        out.append([o["metadata"].get("namespace", ""), o["metadata"]["name"],
                    spec.get("queueName", ""), cq, state,
                    "false" if spec.get("active") is False else "true"])
    return out


def _state(status: dict[str, Any]) -> str:
    true = {c.get("type") for c in status.get("conditions", []) if c.get("status") == "True"}
    if "Finished" in true:
        return "finished"
    if "Admitted" in true:
        return "admitted"
    return "pending"


def _list(api: Any, plural: str, namespace: str | None, args: argparse.Namespace) -> int:
    table = rows(plural, _items(api, plural, namespace), clusterqueue=args.clusterqueue,
                 localqueue=args.localqueue, status=args.status)
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        print("   ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return 0


def patch_for(plural: str, verb: str, keep_running: bool = False) -> dict[str, Any]:
    """The merge patch ``stop``/``resume`` sends; pure, for tests."""
    if plural == "workloads":
        return {"spec": {"active": verb == "resume"}}
    if verb == "resume":
        return {"spec": {"stopPolicy": "None"}}
    return {"spec": {"stopPolicy": "Hold" if keep_running else "HoldAndDrain"}}


def _stop_or_resume(api: Any, plural: str, name: str, namespace: str,
                    args: argparse.Namespace) -> int:
    body = patch_for(plural, args.verb, getattr(args, "keep_already_running", False))
    if plural in NAMESPACED:
        api.patch_namespaced_custom_object(GROUP, VERSION, namespace, plural, name, body)
        name = f"{namespace}/{name}"
    else:
        api.patch_cluster_custom_object(GROUP, VERSION, plural, name, body)
    print(f"{plural[:-1]} {name} {'stopped' if args.verb == 'stop' else 'resumed'}")
    return 0
