"""``kuota history`` — finished workloads: outcome, exit codes, wait and run times.

What Slurm's ``sacct`` shows for jobs, for the workloads the store still keeps
(``kuota scheduler --retain-finished``, 7 days by default). Per workload: its
outcome (Succeeded, Failed, Cancelled, Rejected, Invalid), the exit code of
every pod of its last attempt (``0,0,137``), how many attempts it took, how
long it waited (queued → admitted) and ran (admitted → finished), and when it
ended. Newest last, as a log reads. Exit codes are shown as a shell reports them
(a pod killed by SIGKILL is 137), the numbers ``kuota submit --wait`` exits with.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from kuota.client import LostSubmission
from kuota.commands import output
from kuota.commands.get import in_queue, workload_labels, workload_object
from kuota.commands.output import Columns, Item
from kuota.conventions import shell_status
from kuota.service import cli

COLUMNS = Columns(("name", "outcome", "exit_codes", "attempts", "wait", "run", "ended",
                   "message"), ("queue", "clusterqueue", "nodes", "finished_at", "reason"))


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "history",
        description="Finished workloads the store keeps (see `kuota scheduler "
                    "--retain-finished`), like sacct: outcome, exit codes of the last "
                    "attempt's pods, attempts, time waiting and running, end time.")
    parser.add_argument("--queue", "-q", metavar="QUEUE",
                        help="of this LocalQueue (NAMESPACE/NAME) or ClusterQueue")
    parser.add_argument("--outcome", metavar="OUTCOME",
                        help="only Succeeded, Failed, Cancelled, Rejected or Invalid ones")
    parser.add_argument("--since", type=cli.parse_retention, default=None, metavar="DURATION",
                        help="only those finished in the last DURATION (90s, 30m, 12h, 7d)")
    parser.add_argument("--lost", action="store_true",
                        help="instead: submissions made from this machine that the store "
                             "acknowledged and has lost (a Redis crash losing its last "
                             "writes; see KUOTA_JOURNAL in docs/redis-mode.md)")
    output.add_selector_arg(parser)
    output.add_output_args(parser, watch=False)
    cli.add_store_args(parser)
    parser.set_defaults(func=run)


@cli.handles_errors
def run(args: argparse.Namespace) -> int:
    client = cli.client(args)
    if args.lost:
        output.emit([_lost_item(lost) for lost in client.lost()], LOST_COLUMNS, args)
        return 0
    selector = output.parse_selector(args.selector)
    since = time.time() - args.since if args.since is not None else None
    queued = in_queue(client, args.queue)
    objects = args.output in ("json", "yaml")
    # The finished index, read from --since on: not every record the store holds.
    keys = client.store.indexes.finished_keys(since)
    finished = [w for w in client.store.workloads.get_many(
                    keys, spec=objects or bool(selector)).values()
                if w.state == "Finished"
                and (since is None or (w.finished_at or 0) >= since) and queued(w)
                and (args.outcome is None or w.outcome.value.lower() == args.outcome.lower())
                and (not selector or output.matches(workload_labels(w), selector))]
    finished.sort(key=lambda w: (w.finished_at or 0, w.key))
    pods = client.store.pods.get_many([ref for w in finished for ref in w.pod_refs()])
    exit_codes: dict[str, list[int | None]] = {}
    for pod in pods:
        if pod is not None:
            code = None if pod.exit_code is None else shell_status(pod.exit_code)
            exit_codes.setdefault(pod.ref.workload, []).append(code)
    items = [_item(w, exit_codes.get(w.key, []), objects) for w in finished]
    output.emit(items, COLUMNS, args)
    return 0


LOST_COLUMNS = Columns(("name", "submitted", "submission"), ("submitted_at",))


def _lost_item(lost: LostSubmission) -> Item:
    obj = {"apiVersion": "kuota.dev/v1alpha1", "kind": "LostSubmission",
           "metadata": {"name": lost.key.partition("/")[2],
                        "namespace": lost.key.partition("/")[0]},
           "submission": lost.submission, "submittedAt": output.rfc3339(lost.at)}
    row = {"name": lost.key, "submitted": output.age(lost.at) + " ago",
           "submission": lost.submission, "submitted_at": output.rfc3339(lost.at)}
    return Item(obj, row, {})


def _item(w: Any, codes: list[int | None], objects: bool) -> Item:
    """A finished workload's row; its object only for ``-o json|yaml`` (parsing every
    manifest was most of what listing a week of them cost)."""
    waited = w.admitted_at - w.created if w.admitted_at else None
    ran = w.finished_at - w.admitted_at if w.admitted_at and w.finished_at else None
    obj = workload_object(w) if objects else {}
    if objects:
        obj["status"]["exitCodes"] = codes
        obj["status"]["waitSeconds"] = round(waited, 3) if waited is not None else None
        obj["status"]["runSeconds"] = round(ran, 3) if ran is not None else None
    row = {"name": w.key, "queue": w.queue, "outcome": w.outcome.value,
           "exit_codes": ",".join("-" if c is None else str(c) for c in codes),
           "attempts": w.attempt, "wait": output.duration(waited), "run": output.duration(ran),
           "ended": output.age(w.finished_at) + " ago",
           "finished_at": output.rfc3339(w.finished_at), "clusterqueue": w.cluster_queue,
           "nodes": ",".join(dict.fromkeys(w.placement)), "reason": w.reason,
           "message": w.message}
    return Item(obj, row)  # (filtered by label already)
