"""Federation: the operator's side of multi-cluster dispatch (the member adapters).

The pure core (:mod:`multicluster`) decides *where* a workload goes; this
package carries the decision out and watches it, for the Kubernetes operator:

* :mod:`.copies` — the kinds dispatch carries (Jobs and JobSets): the copy a
  member receives and its status brought home (pure);
* :mod:`.remote_job` — the Job a member receives (pure): the local Job with its
  flavors injected, unsuspended, without its queue label and ``managedBy``,
  named like the local Job and labelled with where it came from;
* :mod:`.job_status` — the remote Job's status made into one the manager's API
  server accepts on the local Job (pure), which kuota alone writes;
* :mod:`.managed_by` — ``spec.managedBy: kuota.dev/multicluster``: which new
  Jobs and JobSets the webhook gives it, and the refusal of one without it (pure);
* :mod:`.member` — what the operator needs from any member (observe its nodes
  and our copies, create a copy, delete a copy), as plain values;
* :mod:`.kubernetes_member` — that interface over the ``kubernetes`` client;
* :mod:`.pool_member` — that interface for a Redis worker pool (copies become
  dispatched workloads in the pool's store; :mod:`.pool_copy` is the pure
  translation of a Job and of the copy's progress);
* :mod:`.tasks` — every remote call as an idempotent rq task with retries and
  backoff, run by that member's own worker thread inside the operator, so a
  slow or failing member never blocks the operator's loops nor other members;
* :mod:`.create_failures` — creates that keep failing: a growing pause per
  (workload, member), then the member counts as refusing the workload (pure);
* :mod:`.reconcile` — the follow / garbage-collect / failover decisions (pure);
* :mod:`.federation` — the operator-side controller tying them together.

See ``docs/multicluster.md``.
"""
