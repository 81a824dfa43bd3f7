"""``kuota get KIND [NAME]`` — what the Redis store holds, as tables or as objects.

Kinds: workloads (wl), clusterqueues (cq), localqueues (lq), nodes. Filters:
a NAME, ``-l`` label selector, and for workloads ``--queue`` (a LocalQueue or
ClusterQueue name) and ``--state``. ClusterQueue usage, borrowing and pending
counts come from the same engine the scheduler runs (:mod:`kuota.service.views`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from kuota import conventions
from kuota.commands import output
from kuota.commands.output import Columns, Item
from kuota.service import cli
from queueing.store import NotFound

KINDS = {
    "workloads": "workloads", "workload": "workloads", "wl": "workloads",
    "clusterqueues": "clusterqueues", "clusterqueue": "clusterqueues", "cq": "clusterqueues",
    "localqueues": "localqueues", "localqueue": "localqueues", "lq": "localqueues",
    "nodes": "nodes", "node": "nodes",
}

#: Workload states ``--state`` accepts: the names every surface shows (kuota.conventions).
STATES = conventions.STATES
#: ``--state`` values only a finished workload has (its state, or an outcome).
FINISHED_STATES = ("Finished", *conventions.OUTCOMES)
#: Names the table showed before states were shared with the dashboard and Kueue
#: (issue 41): still accepted by ``--state``, with a warning, as Admitted.
RENAMED_STATES = {"running": "Admitted", "placing": "Admitted"}

COLUMNS = {
    "workloads": Columns(("name", "queue", "state", "pods", "age", "reason", "message"),
                         ("clusterqueue", "nodes", "attempt", "priority")),
    "clusterqueues": Columns(("name", "cohort", "pending", "admitted", "usage", "active"),
                             ("borrowed",)),
    "localqueues": Columns(("name", "clusterqueue", "pending", "admitted", "stop")),
    "nodes": Columns(("name", "pool", "state", "pods", "capacity", "heartbeat"),
                     ("labels", "reason")),
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "get",
        description="Show what the Redis store holds, as a table that fits the terminal "
                    "(-o wide for every column) or as the objects (-o json|yaml). "
                    "ClusterQueue usage, borrowing and pending counts are computed by the "
                    "same engine the scheduler runs.")
    parser.add_argument("kind", choices=sorted(KINDS), metavar="KIND",
                        help="workloads (wl), clusterqueues (cq), localqueues (lq) or nodes")
    parser.add_argument("name", nargs="?", metavar="NAME",
                        help="only this one (NAMESPACE/NAME or NAME in namespace default for "
                             "workloads and localqueues); not found is exit status 1")
    output.add_selector_arg(parser)
    parser.add_argument("--queue", "-q", metavar="QUEUE",
                        help="workloads: of this LocalQueue (NAMESPACE/NAME) or ClusterQueue")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--namespace", "-n", metavar="NS",
                       help="workloads: only those submitted in namespace NS (all a "
                            "submitter limited to NS may list)")
    where.add_argument("-A", conventions.ALL_NAMESPACES, action="store_true",
                       help="workloads: in every namespace (the default without -n)")
    parser.add_argument("--state", metavar="STATE", type=parse_state,
                        help="workloads: in this state, one of " + ", ".join(STATES))
    parser.add_argument("-a", conventions.INCLUDE_FINISHED, action="store_true",
                        help="workloads: include finished ones (implied by NAME and --state)")
    parser.add_argument("--all", action=_Deprecated, nargs=0, dest="include_finished",
                        help="deprecated: use -a/--include-finished (-A is --all-namespaces)")
    output.add_output_args(parser)
    cli.add_store_args(parser)
    parser.set_defaults(func=run)


class _Deprecated(argparse.Action):
    """``--all``: what ``-a/--include-finished`` is now, said on stderr when used."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        print(f"warning: {option_string} is deprecated: use -a/{conventions.INCLUDE_FINISHED} "
              f"(-A is {conventions.ALL_NAMESPACES}, as in kubectl)", file=sys.stderr)
        setattr(namespace, self.dest, True)


def parse_state(text: str) -> str:
    """A ``--state`` value as its shared name (any case); the old table names Running and
    Placing as Admitted, with a warning."""
    for state in STATES:
        if state.lower() == text.lower():
            return state
    renamed = RENAMED_STATES.get(text.lower())
    if renamed is not None:
        print(f"warning: state {text!r} is now called {renamed!r} (as in Kueue and the "
              "dashboard; the REASON column says when pods wait for a node)", file=sys.stderr)
        return renamed
    raise argparse.ArgumentTypeError(f"{text!r} is not a state; use one of {', '.join(STATES)}")


@cli.handles_errors
def run(args: argparse.Namespace) -> int:
    kind = KINDS[args.kind]
    selector = output.parse_selector(args.selector)
    if kind != "workloads" and (args.queue or args.state or args.namespace):
        raise ValueError("--queue, --state and --namespace filter workloads only")
    client = cli.client(args)
    list_items: Callable[[], list[Item]] = {
        "workloads": lambda: workload_items(client, args),
        "nodes": lambda: node_items(client),
        "clusterqueues": lambda: cluster_queue_items(client),
        "localqueues": lambda: local_queue_items(client),
    }[kind]

    def render() -> None:
        items = [i for i in list_items() if output.matches(i.labels, selector)]
        if args.name is not None:
            items = [i for i in items if i.row["name"] == _full_name(kind, args.name)]
            if not items and kind == "workloads":
                raise client.not_found(_full_name(kind, args.name))
            if not items:
                raise NotFound(f"{kind[:-1]} {_full_name(kind, args.name)} not found")
        output.emit(items, COLUMNS[kind], args, single=args.name is not None)

    if kind == "workloads" and args.output in ("table", "wide"):
        cli.warn_without_scheduler(client)
    return output.watch(render, args)


def _full_name(kind: str, name: str) -> str:
    if kind in ("workloads", "localqueues") and "/" not in name:
        return f"default/{name}"
    return name


# -- workloads ------------------------------------------------------------------------------

def shown_state(w: Any) -> str:
    """What the table says: the lifecycle state in the names the dashboard and Kueue use
    (Admitted, whether or not its pods are placed yet), the outcome for finished ones, and
    Evicting while the pods of a cancelled, failed or evicted workload stop."""
    if w.state in ("Admitted", "Evicting"):
        return str(w.state.value)
    return str(w.outcome.value or w.state.value)


def in_queue(client: Any, queue: str | None) -> Callable[[Any], bool]:
    """``--queue``: a workload of this LocalQueue (``NAMESPACE/NAME``, or ``NAME`` in
    namespace default) or of this ClusterQueue — the one it was admitted to, or, while it
    waits, the one its LocalQueue points at."""
    if not queue:
        return lambda w: True
    local = queue if "/" in queue else f"default/{queue}"
    points_to = {key: str((m.get("spec") or {}).get("clusterQueue", ""))
                 for key, m in client.store.objects.manifests("LocalQueue").items()}
    return lambda w: local == w.queue or queue == (w.cluster_queue or points_to.get(w.queue))


def workload_matches(w: Any, args: argparse.Namespace) -> bool:
    """``--state`` (and, without it, finished ones only with ``-a`` or a NAME)."""
    state = getattr(args, "state", None)
    if state is not None and state not in (w.state.value, w.outcome.value, shown_state(w)):
        return False
    return not (state is None and w.state == "Finished"
                and not (args.include_finished or args.name))


def manifest(w: Any) -> dict[str, Any]:
    """The manifest ``w`` was submitted with; {} when the stored one cannot be read (the
    workload is still listed, with no labels)."""
    try:
        return dict(w.spec())
    except ValueError:
        return {}


def workload_labels(w: Any, spec: dict[str, Any] | None = None) -> dict[str, str]:
    """The labels of ``w``'s manifest (``spec``, when it was parsed already)."""
    labels = ((manifest(w) if spec is None else spec).get("metadata") or {}).get("labels") or {}
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def workload_object(w: Any, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    """The Workload as an API object: the submitted manifest (``spec``, when it was parsed
    already) and a status from the record."""
    doc = manifest(w) if spec is None else spec
    namespace, _, name = w.key.partition("/")
    metadata = dict(doc.get("metadata") or {})
    metadata.update(name=name, namespace=namespace, creationTimestamp=output.rfc3339(w.created))
    status: dict[str, Any] = {
        "state": w.state.value, "outcome": w.outcome.value or None, "reason": w.reason or None,
        "message": w.message or None, "clusterQueue": w.cluster_queue or None,
        "attempt": w.attempt, "pods": w.pods, "podsFinished": w.pods_done,
        "failures": w.failures, "nodes": list(dict.fromkeys(w.placement)),
        "admittedAt": output.rfc3339(w.admitted_at),
        "finishedAt": output.rfc3339(w.finished_at),
    }
    if w.dispatched:
        status["origin"] = w.origin
    return {"apiVersion": doc.get("apiVersion", "kuota.dev/v1alpha1"), "kind": "Workload",
            "metadata": metadata, "spec": doc.get("spec") or {},
            "status": {k: v for k, v in status.items() if v is not None}}


def listed(client: Any, args: argparse.Namespace, *, spec: bool) -> list[Any]:
    """The records a listing needs: the named one only; the finished ones only when they
    may be shown (``-a``, a finished ``--state``): a pool retains a week of them; their
    manifests only with ``spec``."""
    name = getattr(args, "name", None)
    if name is not None:
        record = client.store.workloads.find(_full_name("workloads", name))
        return [record] if record is not None else []
    state = getattr(args, "state", None)
    return list(client.workloads(getattr(args, "namespace", None), spec=spec,
                                 finished=bool(args.include_finished)
                                 or state in FINISHED_STATES))


def workload_items(client: Any, args: argparse.Namespace) -> list[Item]:
    """The listed workloads' rows; their objects for ``-o json|yaml`` only, their labels
    for ``-l`` only: parsing every manifest was most of what listing a week of retained
    workloads cost."""
    items = []
    queued = in_queue(client, args.queue)
    objects, by_label = args.output in ("json", "yaml"), bool(args.selector)
    for w in sorted(listed(client, args, spec=objects or by_label),
                    key=lambda r: (r.created, r.key)):
        if not (workload_matches(w, args) and queued(w)):
            continue
        # A workload dispatched here by a manager has no queue: it shows who sent it.
        cluster_queue = f"dispatched:{w.origin}" if w.dispatched else w.cluster_queue
        row = {"name": w.key, "queue": w.queue, "state": shown_state(w),
               "clusterqueue": cluster_queue, "pods": w.pods or None,
               "nodes": ",".join(dict.fromkeys(w.placement)), "attempt": w.attempt,
               "priority": w.priority, "age": output.age(w.created), "reason": w.reason,
               "message": w.message}
        spec = manifest(w) if objects or by_label else {}
        items.append(Item(workload_object(w, spec) if objects else {}, row,
                          workload_labels(w, spec) if by_label else {}))
    return items


# -- nodes ----------------------------------------------------------------------------------

def node_items(client: Any) -> list[Item]:
    from quota.resources import format_amount

    nodes = client.store.nodes
    pods = nodes.pod_ids(nodes.names())
    now = nodes.time()
    items = []
    for n in client.nodes():
        state = n.state.value + (",Draining" if n.draining else
                                 ",SchedulingDisabled" if n.cordoned else "")
        capacity = {k: format_amount(v, k) for k, v in sorted(n.capacity.items())}
        row = {"name": n.name, "pool": n.pool, "state": state,
               "capacity": ",".join(f"{k}={v}" for k, v in capacity.items()),
               "pods": len(pods.get(n.name, ())),
               "labels": ",".join(f"{k}={v}" for k, v in sorted(n.labels.items())),
               "heartbeat": f"{max(0.0, now - n.heartbeat):.1f}s ago", "reason": n.reason}
        obj = {"apiVersion": "kuota.dev/v1alpha1", "kind": "Node",
               "metadata": {"name": n.name, "labels": dict(n.labels)},
               "spec": {"pool": n.pool, "capacity": capacity, "unschedulable": n.cordoned},
               "status": {"state": n.state.value, "draining": n.draining,
                          "pods": len(pods.get(n.name, ())),
                          "heartbeatTime": output.rfc3339(n.heartbeat),
                          "heartbeatAgeSeconds": round(max(0.0, now - n.heartbeat), 1),
                          # (how long a scheduler waits after a Redis restart for this node)
                          "stopsWithinSeconds": n.stops_within,
                          "reason": n.reason or None}}
        items.append(Item(obj, row, dict(n.labels)))
    return items


# -- queues ---------------------------------------------------------------------------------

def _manifest_items(client: Any, kind: str) -> dict[str, dict[str, Any]]:
    return client.store.objects.manifests(kind)  # type: ignore[no-any-return]


def _labels(manifest: dict[str, Any]) -> dict[str, str]:
    labels = (manifest.get("metadata") or {}).get("labels") or {}
    return {str(k): str(v) for k, v in labels.items()}


def cluster_queue_items(client: Any) -> list[Item]:
    from quota.resources import format_amount

    snap = client.snapshot()
    manifests = _manifest_items(client, "ClusterQueue")
    items = []
    for cq in snap.cluster_queues:
        manifest = manifests.get(cq.name, {})
        usage = " ".join(f"{c.resource}[{c.flavor}]={format_amount(c.usage, c.resource)}/"
                         f"{format_amount(c.nominal, c.resource)}" for c in cq.cells)
        borrowed = " ".join(f"{c.resource}[{c.flavor}]={format_amount(c.borrowed, c.resource)}"
                            for c in cq.cells if c.borrowed)
        row = {"name": cq.name, "cohort": cq.cohort, "usage": usage, "borrowed": borrowed,
               "pending": cq.pending, "admitted": cq.admitted,
               "active": "yes" if cq.active else f"no: {cq.message}"}
        flavors: dict[str, list[dict[str, Any]]] = {}
        for c in cq.cells:
            flavors.setdefault(c.flavor, []).append(
                {"name": c.resource, "total": format_amount(c.usage, c.resource),
                 "borrowed": format_amount(c.borrowed, c.resource)})
        status = {"pendingWorkloads": cq.pending, "admittedWorkloads": cq.admitted,
                  "flavorsUsage": [{"name": f, "resources": r} for f, r in flavors.items()],
                  "conditions": [{"type": "Active", "status": "True" if cq.active else "False",
                                  "message": cq.message or "Can admit new workloads"}]}
        items.append(Item(_object("ClusterQueue", manifest, cq.name, status), row,
                          _labels(manifest)))
    return items


def local_queue_items(client: Any) -> list[Item]:
    snap = client.snapshot()
    manifests = _manifest_items(client, "LocalQueue")
    items = []
    for lq in snap.local_queues:
        manifest = manifests.get(lq.key, {})
        stop = (manifest.get("spec") or {}).get("stopPolicy") or "None"
        row = {"name": lq.key, "clusterqueue": lq.cluster_queue, "pending": lq.pending,
               "admitted": lq.admitted, "stop": stop}
        status = {"pendingWorkloads": lq.pending, "admittedWorkloads": lq.admitted}
        items.append(Item(_object("LocalQueue", manifest, lq.key, status), row,
                          _labels(manifest)))
    return items


def _object(kind: str, manifest: dict[str, Any], name: str,
            status: dict[str, Any]) -> dict[str, Any]:
    metadata = dict(manifest.get("metadata") or {"name": name.rpartition("/")[2]})
    return {"apiVersion": manifest.get("apiVersion", "kuota.dev/v1alpha1"), "kind": kind,
            "metadata": metadata, "spec": manifest.get("spec") or {}, "status": status}
