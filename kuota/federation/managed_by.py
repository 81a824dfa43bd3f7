"""Who runs a dispatched Job or JobSet in the manager: nobody but kuota (``spec.managedBy``; pure).

A Job dispatched to a member never runs in the manager, yet the manager's Job
controller would still manage it: it rewrites the status kuota copies home
(``active`` back to the zero pods it sees) and would finish the Job itself
from copied counts. Since Kubernetes 1.30 a Job may name another controller in
``spec.managedBy``; the built-in one then skips it (``managedByExternalController``
in ``pkg/controller/job``; the ``JobManagedBy`` gate is beta and on by default
from 1.32, GA and locked on from 1.35). The field can only be set when the Job
is created — it is immutable — so kuota's webhook sets it then:

* :func:`default_for` — ``kuota.dev/multicluster`` (:data:`MANAGED_BY`, as
  Kueue's MultiKueue uses ``kueue.x-k8s.io/multikueue``) for a new Job whose
  LocalQueue leads to a ClusterQueue that dispatches **every** workload: one
  listing an AdmissionCheck of controller ``kuota.dev/multicluster`` for all of
  its flavors. A check limited with ``onFlavors`` to some of them would leave
  Jobs admitted on the other flavors to run locally, where a Job managed by
  kuota would never start (Kueue refuses such a ClusterQueue outright). A Job
  naming another controller is left alone; one naming the built-in controller
  (``kubernetes.io/job-controller``, the same as none) is switched, as Kueue does.
  A JobSet likewise (its controller, v0.10.1, skips a JobSet that names another
  one; ``jobset.sigs.k8s.io/jobset-controller`` is its own name).
* :func:`refusal` — why a Job cannot be dispatched: its ``managedBy`` is not
  kuota's (created before its queue got the check, while no webhook set it,
  or naming another controller). The dispatcher rejects its check — the
  workload is deactivated with this message, as Kueue's MultiKueue rejects
  "The owner is not managed by Kueue" — since it could never be fixed without
  recreating the Job.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from multicluster.controller import CONTROLLER_NAME
from quota import api

Body = dict[str, Any]
#: Reads an object the operator has seen: (kind, key) -> its body, or None.
Lookup = Callable[[str, str], Body | None]

#: ``spec.managedBy`` of a Job kuota dispatches: the manager's Job controller skips it.
MANAGED_BY: Final = CONTROLLER_NAME
#: ``spec.managedBy`` naming the built-in Job controller (the same as none).
JOB_CONTROLLER: Final = "kubernetes.io/job-controller"
#: Each kind dispatch carries, and the ``spec.managedBy`` naming its own controller (the
#: same as none): JobSet v0.10.1 skips a JobSet naming another one, as the Job controller.
OWN_CONTROLLERS: Final[Mapping[str, str]] = {
    "Job": JOB_CONTROLLER, "JobSet": "jobset.sigs.k8s.io/jobset-controller"}


def managed_by(job: Mapping[str, Any]) -> str | None:
    value = (job.get("spec") or {}).get("managedBy")
    return value if isinstance(value, str) else None


def dispatches(namespace: str, queue: str, lookup: Lookup) -> bool:
    """Whether every workload of LocalQueue ``namespace/queue`` goes to a member cluster."""
    local = lookup("LocalQueue", f"{namespace}/{queue}")
    cluster_queue = ((local or {}).get("spec") or {}).get("clusterQueue")
    body = lookup("ClusterQueue", cluster_queue) if isinstance(cluster_queue, str) else None
    if body is None:
        return False
    try:
        parsed = api.parse_object(body, source="")
    except api.ObjectError:
        return False  # an invalid queue admits nothing; its problem is reported elsewhere
    if not isinstance(parsed, api.ClusterQueue):
        return False
    spec = parsed.spec
    flavors = set(spec.flavor_names())
    for rule in spec.admission_checks_strategy.admission_checks \
            if spec.admission_checks_strategy is not None else ():
        check = lookup("AdmissionCheck", rule.name) or {}
        if (check.get("spec") or {}).get("controllerName") == CONTROLLER_NAME \
                and (not rule.on_flavors or flavors <= set(rule.on_flavors)):
            return True
    return False


def _kind(obj: Mapping[str, Any]) -> str:
    kind = obj.get("kind")
    return kind if isinstance(kind, str) and kind else "Job"


def default_for(obj: Mapping[str, Any], queue: str | None, lookup: Lookup) -> str | None:
    """The ``spec.managedBy`` a new Job or JobSet submitted to ``queue`` must get; None:
    leave it."""
    own = OWN_CONTROLLERS.get(_kind(obj))
    if own is None or queue is None or managed_by(obj) not in (None, own):
        return None
    namespace = (obj.get("metadata") or {}).get("namespace") or "default"
    return MANAGED_BY if dispatches(namespace, queue, lookup) else None


def refusal(obj: Mapping[str, Any]) -> str | None:
    """Why the Job or JobSet cannot be dispatched (its ``managedBy`` is not kuota's), or
    None."""
    current, kind = managed_by(obj), _kind(obj)
    if current == MANAGED_BY:
        return None
    meta = obj.get("metadata") or {}
    if current in (None, OWN_CONTROLLERS.get(kind)):
        why = (f"the manager's {kind} controller runs it and would fight over the status "
               f"copied home")
    else:
        why = f"it names another controller ({current})"
    return (f"{kind} {meta.get('namespace') or 'default'}/{meta.get('name')} cannot be "
            f"dispatched: its spec.managedBy is not {MANAGED_BY} ({why}); kuota's webhook "
            f"sets it when a {kind} is created into a multi-cluster queue, and it cannot be "
            f"changed later: delete the {kind} and create it again")
