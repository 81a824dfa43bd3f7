"""Redis mode holds a workload's quota until its pods are gone (issue 12, scope 2).

A pod asked to stop — a failed gang mate's, a cancelled or evicted workload's —
still runs until its worker ends it, and Kueue counts an evicted workload's
quota until then. So the store keeps such a workload *Evicting*, and the
scheduler releases its quota only once Redis says no pod of the attempt is
placed or running. A workload waiting for that quota is admitted then, not
before — also across a failover, since the state is in Redis."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from store_builders import LOCAL_QUEUE, SteppedPool, node

from queueing.store import PodRef
from quota.lifecycle import State


def _start_all(pool: SteppedPool, key: str) -> list[PodRef]:
    record = pool.store.workloads.get(key)
    refs = record.pod_refs()
    for ref, name in zip(refs, record.placement, strict=True):
        epoch = pool.store.nodes.get(name).epoch
        assert pool.store.pods.start(ref, node=name, epoch=epoch, devices="", now=pool.now) == "ok"
    return refs


def _exit(pool: SteppedPool, key: str, ref: PodRef, code: int, *, stopped: bool) -> None:
    record = pool.store.workloads.get(key)
    pool.store.pods.exit(ref, node=record.placement[ref.index], pod_count=record.pods,
                         exit_code=code, stopped=stopped, message=f"exit {code}", pid=1,
                         now=pool.now)


def _fail_one(pool: SteppedPool, key: str, refs: list[PodRef]) -> None:
    _exit(pool, key, refs[0], 3, stopped=False)


def _cancel(pool: SteppedPool, key: str, refs: list[PodRef]) -> None:
    pool.client.cancel(key)


@pytest.mark.parametrize(("end", "retries", "want_gang", "want_next", "want_note"), [
    pytest.param(_fail_one, 0, State.FINISHED, State.ADMITTED, "Finished",
                 id="a pod failed, no retry left"),
    # Requeued keeping its place in line: it is admitted again before the newer one.
    pytest.param(_fail_one, 1, State.ADMITTED, State.PENDING, "Requeued",
                 id="a pod failed, requeued"),
    pytest.param(_cancel, 0, State.FINISHED, State.ADMITTED, "Finished", id="cancelled"),
])
def test_the_next_workload_waits_until_the_pods_of_the_last_are_gone(
        end: Callable[[SteppedPool, str, list[PodRef]], None], retries: int,
        want_gang: State, want_next: State, want_note: str) -> None:
    pool = SteppedPool()
    node(pool.store, "a", cpu=2)
    node(pool.store, "b", cpu=2)
    gang = pool.client.submit(["true"], queue=LOCAL_QUEUE, name="gang", count=2,
                              requests={"cpu": 2}, backoff_limit=retries).key
    pool.run()
    refs = _start_all(pool, gang)
    waiting = pool.submit("next", cpu=2, count=2)  # (the whole queue, as the gang)
    pool.run()
    end(pool, gang, refs)
    pool.run()
    assert pool.state(gang) == State.EVICTING
    assert pool.state(waiting) == State.PENDING, \
        "admitted onto the quota of a pod that still runs"
    leader = pool.scheduler.leader
    assert leader is not None
    # A cancel or a final failure ends the workload: it is no eviction to count.
    want_evictions = ["PodFailed"] if retries else []
    assert [e.reason for e in leader.engine.records[gang].evictions] == want_evictions
    # A new scheduler (a failover) knows the quota is still held: it is in Redis.
    pool.restart_scheduler()
    pool.run()
    assert pool.state(waiting) == State.PENDING
    for ref in refs:
        pod = pool.store.pods.get(ref)
        if pod is not None and pod.state.value in ("Placed", "Running"):
            _exit(pool, gang, ref, 143, stopped=True)
    pool.run()
    assert (pool.state(gang), pool.state(waiting)) == (want_gang, want_next)
    assert want_note in [h["event"] for h in pool.store.workloads.history(gang)]


def test_a_stopped_gang_whose_start_job_was_lost_is_sent_again_and_gives_its_nodes_back(
        ) -> None:
    """A start job can be lost (Redis losing its last second after the placement, a
    worker dying with the job). Sent again, a placed pod asked to stop is marked Stopped
    by its worker's start, which gives its node back. Before, only pods of Admitted
    workloads were sent again: a gang cancelled or evicted with such a pod stayed
    Evicting, holding its quota and its node, for good."""
    from kuota.service import jobs

    pool = SteppedPool(node_timeout=4.0)  # pods not started are sent again after 2 s
    node(pool.store, "a", cpu=1)
    gang = pool.submit("gang", cpu=1)
    pool.run(steps=3)
    assert pool.store.workloads.get(gang).placement == ("a",)
    queue = jobs.node_queue(pool.connection.raw, pool.store.keys, "a")
    assert queue.count == 1
    queue.empty()  # the start job is lost
    pool.client.cancel(gang)
    pool.run(steps=3, advance=1.0)
    assert pool.state(gang) == "Evicting"
    assert queue.count == 1, "the placed pod sent again"

    ref = pool.store.workloads.get(gang).pod_refs()[0]
    epoch = pool.store.nodes.get("a").epoch
    assert pool.store.pods.start(ref, node="a", epoch=epoch, devices="", now=pool.now) \
        == "stopped"
    pool.run(steps=3)
    assert pool.state(gang) == "Finished"
    assert pool.store.nodes.pod_ids(["a"]) == {"a": set()}


def test_a_stopping_dispatched_copy_whose_start_job_was_lost_is_sent_again() -> None:
    """The same for a copy a multi-cluster manager dispatched to this pool: its pod mate
    failed while the pod's start job was lost, and the copy waited for that pod for good."""
    from kuota.federation.pool_copy import from_job
    from kuota.federation.remote_job import ORIGIN_LABEL, ORIGIN_WORKLOAD_ANNOTATION
    from kuota.service import jobs
    from kuota.service.dispatched_spec import admission

    pool = SteppedPool(node_timeout=4.0)
    node(pool.store, "a", cpu=2)
    body = {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "copy", "namespace": "default",
                         "labels": {ORIGIN_LABEL: "mgr"},
                         "annotations": {ORIGIN_WORKLOAD_ANNOTATION: "default/job-copy"}},
            "spec": {"parallelism": 2, "backoffLimit": 0, "suspend": False,
                     "template": {"spec": {"containers": [{
                         "name": "main", "command": ["true"],
                         "resources": {"requests": {"cpu": "1"}}}]}}}}
    key, spec = from_job(body, origin="mgr", pool="p", member="pool-a")
    pool.store.dispatched.create(key, origin="mgr", spec=spec.to_dict(),
                                 admission=admission(spec), pods=spec.pods,
                                 backoff_limit=spec.backoff_limit, now=pool.now)
    pool.run(steps=3)
    assert pool.store.workloads.get(key).placement == ("a", "a")
    queue = jobs.node_queue(pool.connection.raw, pool.store.keys, "a")
    queue.empty()  # the start job is lost
    first, second = pool.store.workloads.get(key).pod_refs()
    epoch = pool.store.nodes.get("a").epoch
    assert pool.store.pods.start(first, node="a", epoch=epoch, devices="", now=pool.now) == "ok"
    pool.store.pods.exit(first, node="a", pod_count=2, exit_code=3, stopped=False,
                         message="exit 3", pid=1, now=pool.now)
    pool.run(steps=3, advance=1.0)
    assert pool.state(key) == "Evicting"
    assert queue.count == 1, "the placed pod sent again"

    assert pool.store.pods.start(second, node="a", epoch=epoch, devices="", now=pool.now) \
        == "stopped"
    pool.run(steps=3)
    assert pool.state(key) == "Finished"
    assert pool.store.nodes.pod_ids(["a"]) == {"a": set()}
