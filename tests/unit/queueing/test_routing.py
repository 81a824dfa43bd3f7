"""Routing waiting workloads through LocalQueues to their ClusterQueue's pending queue
when the queue objects change: a config change routes again only the workloads it may
concern, and ends where routing everything afresh would."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from admission.engine import Engine
from queueing.manager import QueueManager
from quota.config import ClusterQueueConfig, EngineConfig, LocalQueueConfig
from quota.lifecycle import State
from quota.workload import PodSetInfo, WorkloadInfo
from tests.builders import ClusterQueueBuilder, WorkloadBuilder, flavor, local_queue


def engine() -> Engine:
    e = Engine(config=EngineConfig(), rng=random.Random(1))
    e.apply(flavor("f"))
    e.apply(ClusterQueueBuilder("cq").flavor("f", {"cpu": 4}).obj())
    e.apply(local_queue("cq", name="lq"))
    return e


class TestAWaitingWorkloadFollowsItsQueue:
    def test_through_a_change_of_strategy(self) -> None:
        e = engine()
        key = e.submit(WorkloadBuilder("big").pod_set(count=8, cpu=1).obj()).info.key
        e.apply(ClusterQueueBuilder("cq").flavor("f", {"cpu": 8})
                .set(queueing_strategy="StrictFIFO").obj())
        assert key in e.queues.queues["cq"]
        e.run_until_idle(1)
        assert e.records[key].state is State.ADMITTED

    def test_through_its_cluster_queue_deleted_and_made_again(self) -> None:
        e = engine()
        key = e.submit(WorkloadBuilder("w").pod_set(count=1, cpu=1).obj()).info.key
        e.delete("ClusterQueue", "cq")
        assert e.queues.why_waiting(key) == (
            "ClusterQueueNotFound", "ClusterQueue cq (of LocalQueue ns/lq) doesn't exist")
        e.apply(ClusterQueueBuilder("cq").flavor("f", {"cpu": 4}).obj())
        e.run_until_idle(1)
        assert e.records[key].state is State.ADMITTED


# -- incremental routing against routing everything afresh ---------------------------------

NAMESPACES = ("a", "b")
LOCAL_QUEUES = ("lq1", "lq2", "lq3")
CLUSTER_QUEUES = ("cq1", "cq2", "cq3")

_config = st.tuples(
    st.dictionaries(st.sampled_from(CLUSTER_QUEUES),
                    st.sampled_from(["BestEffortFIFO", "StrictFIFO"])),
    st.dictionaries(st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(LOCAL_QUEUES)),
                    st.sampled_from(CLUSTER_QUEUES)))
_op = st.one_of(
    st.tuples(st.just("configure"), _config),
    st.tuples(st.just("push"), st.tuples(st.integers(0, 9), st.sampled_from(NAMESPACES),
                                         st.sampled_from(LOCAL_QUEUES))),
    st.tuples(st.just("remove"), st.integers(0, 9)))


def configs(config: tuple[dict[str, str], dict[tuple[str, str], str]],
            ) -> tuple[list[ClusterQueueConfig], list[LocalQueueConfig]]:
    cqs, lqs = config
    return ([ClusterQueueConfig(name, queueing_strategy=s) for name, s in sorted(cqs.items())],
            [LocalQueueConfig(ns, name, cq) for (ns, name), cq in sorted(lqs.items())])


def routes(manager: QueueManager) -> tuple[dict[str, tuple[str, str]], dict[str, set[str]]]:
    """Who is parked and why, and who waits in which pending queue."""
    return (dict(manager.parked),
            {name: {info.key for info in queue.ordered()}
             for name, queue in manager.queues.items()})


@settings(max_examples=300, deadline=None)
@given(ops=st.lists(_op, max_size=30))
def test_a_config_change_routes_as_routing_everything_afresh(ops: list[tuple]) -> None:
    manager = QueueManager()
    config: tuple[dict[str, str], dict[tuple[str, str], str]] = ({}, {})
    waiting: dict[str, tuple[WorkloadInfo, float]] = {}
    for op, arg in ops:
        if op == "configure":
            config = arg
            manager.configure(*configs(config))
        elif op == "push":
            n, ns, lq = arg
            info = WorkloadInfo(ns, f"w{n}", lq, (PodSetInfo("main", 1, {"cpu": 1000}),))
            manager.push(info, float(n))  # (the same key again: it moves)
            waiting[info.key] = (info, float(n))
        else:
            for key in [k for k, (info, _) in waiting.items() if info.name == f"w{arg}"]:
                manager.remove(key)
                del waiting[key]
        afresh = QueueManager()
        afresh.configure(*configs(config))
        for info, timestamp in waiting.values():
            afresh.push(info, timestamp)
        assert routes(manager) == routes(afresh)
