"""``kubectl kuota``: kueuectl's everyday verbs for kuota's objects.

Installed as the console script ``kubectl-kuota``, so kubectl finds it on PATH and runs
it for ``kubectl kuota VERB``. It reads the kubeconfig as kubectl does (``--kubeconfig``,
else ``$KUBECONFIG``, else ``~/.kube/config``; ``--context``) and talks to the API server
with the same credentials.

    kubectl kuota list clusterqueues                 # name, cohort, pending, admitted, stop
    kubectl kuota list localqueues [-n NS | -A]
    kubectl kuota list workloads [-n NS | -A] [--clusterqueue CQ] [--localqueue LQ]
                                 [--status Pending|QuotaReserved|Admitted|Finished|...]
    kubectl kuota stop clusterqueue NAME [--keep-already-running]   # HoldAndDrain / Hold
    kubectl kuota resume clusterqueue NAME
    kubectl kuota stop localqueue NAME -n NS [--keep-already-running]
    kubectl kuota stop workload NAME -n NS           # spec.active: false (evicted if running)
    kubectl kuota resume workload NAME -n NS
    kubectl kuota pending clusterqueue NAME          # positions, in admission order
    kubectl kuota pending localqueue NAME -n NS [--offset N] [--limit N]
    kubectl kuota why NAME -n NS                     # why a workload waits (as kuota why)
    kubectl kuota describe workload NAME -n NS       # the whole story of a workload
    kubectl kuota create clusterqueue NAME --nominal-quota "FLAVOR:cpu=8,memory=32Gi;..."
          [--cohort C] [--borrowing-limit ...] [--lending-limit ...]
          [--queuing-strategy StrictFIFO|BestEffortFIFO] [--namespace-selector k=v,...]
          [--reclaim-within-cohort P] [--preemption-within-cluster-queue P] [--dry-run]
    kubectl kuota create localqueue NAME -n NS --clusterqueue CQ [--ignore-unknown-cq]

Stopping follows Kueue's ``stopPolicy``: ``HoldAndDrain`` (the default, as in
kueuectl and ``kuota queue stop``) also evicts what runs; ``--keep-already-running``
sets ``Hold``, which only stops new admissions. Pending positions come from the
operator's aggregated API ``visibility.kuota.dev`` (docs/operator.md, "Pending
positions"). States, ``-A`` and exit statuses (0 done, 1 failed or not found, 2
invalid input) are those of ``kuota`` (docs/cli-conventions.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from kuota import conventions

GROUP, VERSION = "kuota.dev", "v1alpha1"
PLURALS = {"clusterqueue": "clusterqueues", "clusterqueues": "clusterqueues",
           "cq": "clusterqueues", "localqueue": "localqueues", "localqueues": "localqueues",
           "lq": "localqueues", "workload": "workloads", "workloads": "workloads",
           "wl": "workloads"}
NAMESPACED = {"localqueues", "workloads"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kubectl kuota",
                                     description=conventions.plain(__doc__ or ""),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig file (as kubectl)")
    parser.add_argument("--context", default=None, help="kubeconfig context (as kubectl)")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    listing = verbs.add_parser("list", help="list ClusterQueues, LocalQueues or Workloads")
    listing.add_argument("kind", choices=sorted(PLURALS))
    _namespace_args(listing, every=True)
    listing.add_argument("--clusterqueue", "-c", default=None,
                         help="workloads: only those reserved in / queued for this ClusterQueue")
    listing.add_argument("--localqueue", "-q", default=None,
                         help="workloads: only those of this LocalQueue")
    listing.add_argument("--status", type=_status, default=None, metavar="STATE",
                         help="workloads: only those in this state (any case): "
                              + ", ".join(conventions.STATES))
    for verb, text in (("stop", "stop admitting to a queue, or deactivate a workload"),
                       ("resume", "undo stop")):
        sub = verbs.add_parser(verb, help=text)
        sub.add_argument("kind", choices=sorted(PLURALS))
        sub.add_argument("name")
        _namespace_args(sub)
        if verb == "stop":
            sub.add_argument("--keep-already-running", action="store_true",
                             help="queues: Hold (stop new admissions only) instead of "
                                  "HoldAndDrain (also evict what runs; the default)")
    pending = verbs.add_parser("pending", help="pending workloads of a queue, with positions")
    pending.add_argument("kind", choices=("clusterqueue", "cq", "localqueue", "lq"))
    pending.add_argument("name")
    _namespace_args(pending)
    pending.add_argument("--offset", type=int, default=0, help="first position shown")
    pending.add_argument("--limit", type=int, default=1000, help="how many (default 1000)")
    why = verbs.add_parser("why", help="why a workload waits, and where it stands")
    why.add_argument("name")
    _namespace_args(why)
    describe = verbs.add_parser("describe", help="a workload's requests, state and history")
    describe.add_argument("kind", choices=("workload", "wl"))
    describe.add_argument("name")
    _namespace_args(describe)
    creating = verbs.add_parser("create", help="create a ClusterQueue or LocalQueue")
    creating.add_argument("kind", choices=("clusterqueue", "cq", "localqueue", "lq"))
    creating.add_argument("name")
    _namespace_args(creating)
    creating.add_argument("--clusterqueue", "-c",
                          help="localqueue: its ClusterQueue (required)")
    creating.add_argument("--ignore-unknown-cq", action="store_true",
                          help="localqueue: create it even if the ClusterQueue does not exist")
    creating.add_argument("--cohort", help="clusterqueue: its cohort")
    creating.add_argument("--nominal-quota", metavar="QUOTAS",
                          help='clusterqueue: "FLAVOR:RES=QTY,RES=QTY;FLAVOR2:..."')
    creating.add_argument("--borrowing-limit", metavar="QUOTAS", help="same syntax")
    creating.add_argument("--lending-limit", metavar="QUOTAS", help="same syntax")
    creating.add_argument("--queuing-strategy", choices=("StrictFIFO", "BestEffortFIFO"))
    creating.add_argument("--namespace-selector", metavar="K=V,...",
                          help="namespaces allowed (default: all)")
    creating.add_argument("--reclaim-within-cohort",
                          choices=("Never", "LowerPriority", "Any"))
    creating.add_argument("--preemption-within-cluster-queue",
                          choices=("Never", "LowerPriority", "LowerOrNewerEqualPriority"))
    creating.add_argument("--dry-run", action="store_true",
                          help="print the object as YAML instead of creating it")
    return parser


def _namespace_args(parser: argparse.ArgumentParser, *, every: bool = False) -> None:
    """``-n``; and ``-A`` (only where a command can act on every namespace: ``list``)."""
    parser.add_argument("--namespace", "-n", default=None,
                        help="namespace (default: the context's, else default)")
    if every:
        parser.add_argument("-A", conventions.ALL_NAMESPACES, action="store_true",
                            help="list across all namespaces")


def _status(text: str) -> str:
    """A ``--status`` value as its shared state name (any case)."""
    for state in conventions.STATES:
        if state.lower() == text.lower():
            return state
    raise argparse.ArgumentTypeError(
        f"{text!r} is not a state; use one of {', '.join(conventions.STATES)}")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.verb == "create" and args.dry_run:  # client-side: no cluster needed
        try:
            return _create(None, PLURALS[args.kind], args.name, args.namespace or "default", args)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return conventions.BAD_INPUT
    from kubernetes import client, config  # here: --help must not pay for it

    from kuota.kubectl.create import NoSuchObject

    try:
        api_client = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=args.kubeconfig, context=args.context)
        _, active = config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
            config_file=args.kubeconfig)
    except (config.ConfigException, OSError) as exc:
        print(f"error: kubeconfig: {exc}", file=sys.stderr)
        return conventions.FAILED
    namespace = args.namespace or (active or {}).get("context", {}).get("namespace", "default")
    api = client.CustomObjectsApi(api_client)
    plural = PLURALS.get(getattr(args, "kind", "workload"), "workloads")
    try:
        if args.verb == "list":
            return _list(api, plural, None if args.all_namespaces else namespace, args)
        if args.verb == "pending":
            return _pending(api_client, plural, args.name, namespace, args)
        if args.verb == "why":
            return _why(api_client, args.name, namespace)
        if args.verb == "describe":
            return _describe(api_client, args.name, namespace)
        if args.verb == "create":
            return _create(api, plural, args.name, namespace, args)
        return _stop_or_resume(api, plural, args.name, namespace, args)
    except ValueError as exc:  # a flag, or an object the models refuse: names the field
        print(f"error: {exc}", file=sys.stderr)
        return conventions.BAD_INPUT
    except (client.ApiException, NoSuchObject) as exc:
        what = f"{exc.status} {_message(exc)}" if isinstance(exc, client.ApiException) else exc
        print(f"error: {plural} {getattr(args, 'name', '')}: {what}", file=sys.stderr)
        return conventions.FAILED
    finally:
        api_client.close()


def _message(exc: Any) -> str:
    """The API's own Status message when there is one (it names the field), else the reason."""
    try:
        return str(json.loads(exc.body).get("message") or exc.reason)
    except (TypeError, ValueError, AttributeError):
        return str(exc.reason)


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
                or (status and not conventions.state_matches(state, status))):
            continue
        out.append([o["metadata"].get("namespace", ""), o["metadata"]["name"],
                    spec.get("queueName", ""), cq, state,
                    "false" if spec.get("active") is False else "true"])
    return out


def _state(status: dict[str, Any]) -> str:
    """The state ``kuota get`` and the dashboard would show (kuota.conventions)."""
    return conventions.state_of_conditions(status.get("conditions") or [])


def _list(api: Any, plural: str, namespace: str | None, args: argparse.Namespace) -> int:
    _print(rows(plural, _items(api, plural, namespace), clusterqueue=args.clusterqueue,
                localqueue=args.localqueue, status=args.status))
    return 0


def _print(table: list[list[str]]) -> None:
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        print("   ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


VISIBILITY = "/apis/visibility.kuota.dev/v1beta2"


def pending_path(plural: str, name: str, namespace: str) -> str:
    if plural == "clusterqueues":
        return f"{VISIBILITY}/clusterqueues/{name}/pendingworkloads"
    return f"{VISIBILITY}/namespaces/{namespace}/localqueues/{name}/pendingworkloads"


def pending_rows(summary: dict[str, Any], *, local: bool = False) -> list[list[str]]:
    """The table of a PendingWorkloadsSummary (header first); pure, for tests."""
    out = [["POSITION", "NAMESPACE", "NAME", "LOCALQUEUE", "PRIORITY", "STATE", "REASON"]]
    for item in summary.get("items") or []:
        meta = item.get("metadata") or {}
        position = item.get("positionInLocalQueue" if local else "positionInClusterQueue", 0)
        out.append([str(position), meta.get("namespace", ""), meta.get("name", ""),
                    str(item.get("localQueueName", "")), str(item.get("priority", 0)),
                    conventions.INADMISSIBLE if item.get("inadmissible")
                    else conventions.ACTIVE,
                    str(item.get("reason", ""))])
    return out


def _get_raw(api_client: Any, path: str, query: dict[str, Any] | None = None) -> Any:
    """GET a path of an aggregated API (no generated client knows it), as ``get --raw``."""
    request = api_client.param_serialize(
        "GET", path, query_params=list((query or {}).items()),
        header_params={"Accept": "application/json"}, auth_settings=["BearerToken"])
    answer = api_client.call_api(*request)
    answer.read()
    return api_client.response_deserialize(answer, {"200": "object"}).data


class VisibilityUnavailable(Exception):
    """The visibility API answered nothing useful; the message says why and what to do."""


#: What the API server answers when no APIService serves the group, and when one does but
#: nobody answers behind it.
NOT_INSTALLED = ("pending positions are not served by this cluster: the API "
                 "visibility.kuota.dev/v1beta2 is not installed (no APIService "
                 "v1beta2.visibility.kuota.dev). Install kuota with the chart's "
                 "visibility.enabled=true (the default) or apply "
                 "manifests/operator/visibility.yaml (docs/operator.md, \"Pending positions\")")
NOT_ANSWERING = ("pending positions are unavailable: the APIService "
                 "v1beta2.visibility.kuota.dev is installed but its server did not answer "
                 "({status}): is the operator running with --visibility-listen, and is its "
                 "Service kuota-visibility reaching it? (kubectl get apiservice "
                 "v1beta2.visibility.kuota.dev shows why)")


def _pending_summary(api_client: Any, path: str, query: dict[str, Any]) -> Any:
    """GET a pending-workloads path; :class:`VisibilityUnavailable` where the API is not
    installed (a 404 whose group is unknown, not a queue that does not exist) or not
    answering (503)."""
    from kubernetes.client import ApiException

    try:
        return _get_raw(api_client, path, query)
    except ApiException as exc:
        if exc.status == 503:
            raise VisibilityUnavailable(NOT_ANSWERING.format(
                status=f"{exc.status} {_message(exc)}")) from None
        if exc.status == 404 and not _visibility_installed(api_client):
            raise VisibilityUnavailable(NOT_INSTALLED) from None
        raise


def _visibility_installed(api_client: Any) -> bool:
    """Whether the API server knows the group version (discovery, as kubectl asks)."""
    from kubernetes.client import ApiException

    try:
        _get_raw(api_client, VISIBILITY)
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def _pending(api_client: Any, plural: str, name: str, namespace: str,
             args: argparse.Namespace) -> int:
    try:
        summary = _pending_summary(api_client, pending_path(plural, name, namespace),
                                   {"offset": args.offset, "limit": args.limit})
    except VisibilityUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return conventions.FAILED
    table = pending_rows(summary, local=plural == "localqueues")
    if len(table) == 1:
        where = name if plural == "clusterqueues" else f"{namespace}/{name}"
        print(f"no pending workloads in {plural[:-1]} {where}")
        return 0
    _print(table)
    return 0


def _explained(api_client: Any, name: str, namespace: str) -> Any:
    """The Workload's page as the dashboard reads it: its view and the engine rebuilt from
    the cluster's kuota objects (as the operator does), which every why reads."""
    from kubernetes.client import ApiException

    from kuota.dashboard.kube_source import KubeSource

    source = KubeSource(api_client, "kubectl kuota")
    page = source.workload(f"{namespace}/{name}", source.overview())
    if page is None:
        raise ApiException(status=404, reason=f"Workload {namespace}/{name} not found")
    return page


def _why(api_client: Any, name: str, namespace: str) -> int:
    page = _explained(api_client, name, namespace)
    print(page.why, end="")
    return 0


def _describe(api_client: Any, name: str, namespace: str) -> int:
    from kuota import explanation

    page = _explained(api_client, name, namespace)
    print(explanation.describe(page.facts.view, page.engine), end="")
    return 0


def _create(api: Any, plural: str, name: str, namespace: str, args: argparse.Namespace) -> int:
    from kubernetes.client import ApiException

    from kuota.kubectl import create

    if plural == "clusterqueues":
        doc = create.cluster_queue(
            name, cohort=args.cohort, queueing_strategy=args.queuing_strategy,
            namespace_selector=create.selector("--namespace-selector", args.namespace_selector),
            reclaim_within_cohort=args.reclaim_within_cohort,
            within_cluster_queue=args.preemption_within_cluster_queue,
            nominal=create.parse_quotas("--nominal-quota", args.nominal_quota),
            borrowing=create.parse_quotas("--borrowing-limit", args.borrowing_limit),
            lending=create.parse_quotas("--lending-limit", args.lending_limit))
    else:
        if not args.clusterqueue:
            raise create.FlagError("localqueue: --clusterqueue is required")
        if not args.ignore_unknown_cq and not args.dry_run:
            try:
                api.get_cluster_custom_object(GROUP, VERSION, "clusterqueues", args.clusterqueue)
            except ApiException as exc:
                if exc.status != 404:
                    raise
                raise create.NoSuchObject(f"--clusterqueue {args.clusterqueue}: no such "
                                          "ClusterQueue (--ignore-unknown-cq creates the "
                                          "LocalQueue anyway)") from None
        doc = create.local_queue(name, namespace, args.clusterqueue)
    if args.dry_run:
        import yaml

        print(yaml.safe_dump(doc, sort_keys=False), end="")
        return 0
    if plural == "clusterqueues":
        api.create_cluster_custom_object(GROUP, VERSION, plural, doc)
        print(f"clusterqueue {name} created")
    else:
        api.create_namespaced_custom_object(GROUP, VERSION, namespace, plural, doc)
        print(f"localqueue {namespace}/{name} created")
    return 0


def patch_for(plural: str, verb: str, keep_running: bool = False) -> dict[str, Any]:
    """The merge patch ``stop``/``resume`` sends; pure, for tests."""
    if plural == "workloads":
        return {"spec": {"active": verb == "resume"}}
    if verb == "resume":
        return {"spec": {"stopPolicy": "None"}}
    return {"spec": {"stopPolicy": conventions.stop_policy(keep_running)}}


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
