"""A cycle's heads come from the ClusterQueues that may have one to try — a set kept as
workloads come, are blocked, unblocked and pinned — and are exactly what a look at every
queue finds, in the queues' order."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from queueing.manager import QueueManager
from quota.config import ClusterQueueConfig, LocalQueueConfig
from quota.workload import PodSetInfo, WorkloadInfo

CLUSTER_QUEUES = ("cq1", "cq2", "cq3", "cq4")
LOCAL_QUEUES = ("lq1", "lq2", "lq3", "lq4")

_strategies = st.dictionaries(st.sampled_from(CLUSTER_QUEUES),
                              st.sampled_from(["BestEffortFIFO", "StrictFIFO"]), min_size=1)
_op = st.one_of(
    st.tuples(st.just("configure"), _strategies),
    # (two shapes: two equivalence classes, blocked apart)
    st.tuples(st.just("push"), st.tuples(st.integers(0, 11), st.sampled_from(LOCAL_QUEUES),
                                         st.integers(1, 2))),
    st.tuples(st.just("remove"), st.integers(0, 11)),
    # a cycle: each head blocked (for quota, or for its spec) or pinned, or left
    st.tuples(st.just("cycle"), st.lists(st.sampled_from(["quota", "spec", "pin", "none"]),
                                         min_size=4, max_size=4)),
    st.tuples(st.just("unblock"), st.tuples(st.sets(st.sampled_from(CLUSTER_QUEUES)),
                                            st.booleans())),
)


def scanned(manager: QueueManager) -> list[tuple[str, str, bool]]:
    """The heads as every queue's own head() gives them (the old way: all looked at)."""
    out = []
    for name, queue in manager.queues.items():
        info = queue.head() if queue else None
        if info is not None:
            out.append((name, info.key, queue.pinned == info.key))
    return out


def configure(manager: QueueManager, strategies: dict[str, str]) -> None:
    names = sorted(strategies)
    manager.configure([ClusterQueueConfig(n, queueing_strategy=strategies[n]) for n in names],
                      [LocalQueueConfig("ns", lq, names[i % len(names)])
                       for i, lq in enumerate(LOCAL_QUEUES)])


@settings(max_examples=500, deadline=None)
@given(first=_strategies, ops=st.lists(_op, max_size=40))
def test_the_heads_are_what_a_look_at_every_queue_finds(
        first: dict[str, str], ops: list[tuple[str, Any]]) -> None:
    manager = QueueManager()
    configure(manager, first)
    for op, arg in ops:
        if op == "configure":
            configure(manager, arg)
        elif op == "push":
            n, lq, cpus = arg
            manager.push(WorkloadInfo("ns", f"w{n}", lq, (PodSetInfo("main", 1,
                                                                      {"cpu": 1000 * cpus}),)),
                         float(n))
        elif op == "remove":
            manager.remove(f"ns/w{arg}")
        elif op == "cycle":
            for head, verdict in zip(manager.heads(), arg, strict=False):
                if verdict == "quota":
                    manager.block(head, "Pending", "insufficient quota")
                elif verdict == "spec":
                    manager.block(head, "NoMatchingFlavor", "does not fit any flavor")
                elif verdict == "pin":
                    manager.pin(head)
        else:
            names, quota_freed = arg
            manager.unblock(names, quota_freed=quota_freed)
        want = scanned(manager)
        assert [(h.cluster_queue, h.info.key, h.preemptor) for h in manager.heads()] == want
