"""Pending queues: order, equivalence classes, StrictFIFO vs BestEffortFIFO."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from queueing.pending import PendingQueue
from quota.workload import PodSetInfo, WorkloadInfo


def wl(name: str, *, cpu: int = 1000, priority: int = 0, created: float = 0.0) -> WorkloadInfo:
    return WorkloadInfo("ns", name, "lq", (PodSetInfo("main", 1, {"cpu": cpu}),),
                        priority=priority, created=created)


def push_all(queue: PendingQueue, *infos: WorkloadInfo) -> None:
    for info in infos:
        queue.push(info, info.created)


def drain(queue: PendingQueue) -> list[str]:
    order = []
    while (head := queue.head()) is not None:
        order.append(head.name)
        queue.remove(head.key)
    return order


def test_order_is_priority_then_time_then_name() -> None:
    q = PendingQueue("cq")
    push_all(q, wl("late", created=5), wl("early", created=1), wl("vip", priority=10, created=9),
             wl("b-tie", created=3), wl("a-tie", created=3))
    assert drain(q) == ["vip", "early", "a-tie", "b-tie", "late"]


def test_best_effort_sets_a_whole_class_aside() -> None:
    q = PendingQueue("cq", "BestEffortFIFO")
    big1, big2 = wl("big1", cpu=8000, created=0), wl("big2", cpu=8000, created=1)
    small = wl("small", created=2)
    push_all(q, big1, big2, small)
    assert q.head() == big1
    q.block(big1, "WaitingForQuota", "no room")
    assert q.head() == small, "the equal big2 must not be tried again"
    assert q.why_blocked(big2) == ("WaitingForQuota", "no room")
    assert q.blocked_count() == 2, "big1 and big2, not small"
    q.unblock()
    assert q.head() == big1
    assert q.blocked_count() == 0


def test_strict_fifo_head_holds_the_queue() -> None:
    q = PendingQueue("cq", "StrictFIFO")
    big, small = wl("big", cpu=8000, created=0), wl("small", created=1)
    push_all(q, big, small)
    q.block(big, "WaitingForQuota", "no room")
    assert q.head() is None
    assert q.blocked_count() == 2, "the held queue: every workload waits"
    q.unblock()
    assert q.head() == big


def test_strict_fifo_newcomer_ahead_of_holder_gets_a_try() -> None:
    q = PendingQueue("cq", "StrictFIFO")
    big = wl("big", cpu=8000, created=5)
    push_all(q, big)
    q.block(big, "WaitingForQuota", "no room")
    urgent = wl("urgent", priority=100, created=6)
    q.push(urgent, urgent.created)
    assert q.head() == urgent


def test_remove_from_the_middle_keeps_order() -> None:
    q = PendingQueue("cq")
    push_all(q, *(wl(f"w{i}", created=i) for i in range(5)))
    q.remove("ns/w2")
    q.remove("ns/w0")
    assert drain(q) == ["w1", "w3", "w4"]
    assert len(q) == 0


def test_blocked_class_member_added_later_waits_too() -> None:
    q = PendingQueue("cq")
    a = wl("a", cpu=8000, created=0)
    push_all(q, a)
    q.block(a, "WaitingForQuota", "no room")
    b = wl("b", cpu=8000, created=1)
    q.push(b, b.created)
    assert q.head() is None


def test_positions_in_cluster_queue_and_local_queue() -> None:
    from queueing.manager import QueueManager
    from tests.builders import ClusterQueueBuilder, local_queue

    manager = QueueManager()
    manager.configure([ClusterQueueBuilder("cq").obj()],
                      [local_queue("cq", "lq-a"), local_queue("cq", "lq-b")])
    for name, lq, at in [("a1", "lq-a", 0), ("b1", "lq-b", 1), ("a2", "lq-a", 2),
                         ("b2", "lq-b", 3)]:
        manager.push(WorkloadInfo("ns", name, lq, (PodSetInfo("main", 1, {"cpu": 1}),),
                                  created=at), at)
    got = [(info.name, in_cq, in_lq) for info, in_cq, in_lq in manager.positions("cq")]
    assert got == [("a1", 0, 0), ("b1", 1, 0), ("a2", 2, 1), ("b2", 3, 1)]


# A random sequence of queue operations: (op, workload number, cpu class).
_OPS = st.lists(st.tuples(st.sampled_from(["push", "remove", "block", "unblock"]),
                          st.integers(0, 7), st.integers(1, 3)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(ops=_OPS)
def test_blocked_count_is_the_waiting_workloads_a_reason_is_named_for(
        ops: list[tuple[str, int, int]]) -> None:
    q = PendingQueue("cq")
    infos: dict[int, WorkloadInfo] = {}
    for op, n, cpu in ops:
        if op == "push":
            infos[n] = wl(f"w{n}", cpu=1000 * cpu, created=float(n))
            q.push(infos[n], infos[n].created)
        elif op == "remove":
            q.remove(f"ns/w{n}")
        elif op == "block" and n in infos:
            q.block(infos[n], "WaitingForQuota", "no room")
        elif op == "unblock":
            q.unblock()
        want = sum(1 for info in infos.values()
                   if info.key in q and q.why_blocked(info) is not None)
        assert q.blocked_count() == want
