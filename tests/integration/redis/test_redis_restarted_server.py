"""A scheduler never goes on from what it knew of a Redis that has restarted since.

A Redis that crashes and restarts from its AOF may come back behind what the scheduler
saw (``appendfsync everysec`` loses up to a second of writes): pods the leader saw
end are running again, admissions it made are gone. redis-py reconnects a pooled
connection whose server went away without a word, so a leader that sent no command
while Redis was down went on deciding from its memory of the lost second. Its node view
counted the room of an ended pod as free, and it placed a second gang on a node the
restored store still gave to the first. The chaos test caught it as a node's pod set
holding more than its capacity (test_redis_chaos.py, seed 8).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from chaos import LossyRedis
from harness import CQ, queues

from kuota.client import Client
from kuota.service.connection import ServerRestarted, connect
from kuota.service.leader import Timing
from kuota.service.scheduler import SchedulerOptions, SchedulerService
from queueing.store import PodRef, Store, WorkloadRecord
from quota.lifecycle import State

pytestmark = pytest.mark.redis

PREFIX = "restarts"


@pytest.fixture
def server() -> Iterator[LossyRedis]:
    server = LossyRedis()
    server.start()
    try:
        yield server
    finally:
        server.cleanup()


def step_until(service: SchedulerService, what: str, done: Callable[[], object],
               timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        service.step()


def record(store: Store, name: str) -> WorkloadRecord:
    return store.workloads.get(f"default/{name}")


def held_cpu(store: Store, node: str) -> int:
    """Milli-cpu of the pods holding ``node`` in the store."""
    refs = [PodRef.parse(p) for p in store.nodes.pod_ids([node])[node]]
    return sum(p.requests.get("cpu", 0) for p in store.pods.get_many(refs) if p is not None)


def test_a_leader_rebuilds_from_a_redis_that_restarted_between_two_steps(
        server: LossyRedis) -> None:
    # The scheduler's own connection; the test (and the node) use the client's.
    conn = connect(server.url, prefix=PREFIX)
    client = Client(connection=connect(server.url, prefix=PREFIX))
    store = client.store
    client.apply(queues(CQ("cq", {"cpu": 4})))
    epoch = store.nodes.register("n1", pool="p", capacity={"cpu": 2000}, labels={},
                                 devices=(), now=time.time())
    service = SchedulerService(conn, SchedulerOptions(
        identity="s1", timing=Timing(batch=0.0, poll=0.05, restart_pause=0.5)))
    client.submit(["true"], queue="default/lq-cq", name="first", requests={"cpu": 2})
    step_until(service, "the first gang to be placed", lambda: record(store, "first").placement)
    server.mark()  # what the crash keeps: the first gang placed on n1, not started

    # Its pod runs and ends, and the leader sees n1 free again ...
    ref = record(store, "first").pod_refs()[0]
    assert store.pods.start(ref, node="n1", epoch=epoch, devices="", now=time.time()) == "ok"
    store.pods.exit(ref, node="n1", pod_count=1, exit_code=0, stopped=False, message="",
                    pid=1, now=time.time())
    step_until(service, "the leader to see the first end",
               lambda: service.leader is not None
               and "default/first" not in service.leader.tracked)
    # ... and Redis crashes losing both, while the leader waits between two steps.
    server.crash()
    assert record(store, "first").state is State.ADMITTED

    client.submit(["true"], queue="default/lq-cq", name="second", requests={"cpu": 2})
    terms = service.terms
    met = time.monotonic()
    service.step()  # meets the restarted server: drops the leader, pauses
    assert service.leader is None
    assert time.monotonic() - met >= 0.5, "the workers are given time to stop lost pods"
    for _ in range(50):
        service.step()
        assert held_cpu(store, "n1") <= 2000, "n1 given to both gangs"
    assert service.terms > terms, "the leader rebuilt from the restarted store"
    second = record(store, "second")
    assert second.state is State.ADMITTED and not second.placement, second
    assert service.failures == 0


@pytest.mark.parametrize(("stops_within", "restart_pause", "want_pause"), [
    ((0.2, 1.0), 0.4, 1.5),  # the slowest worker's stop check and grace, and a margin
    ((0.1, 0.0), 0.4, 0.4),  # --restart-pause is the least
    ((), 0.4, 0.4),
    ((1.0,), 0.0, 0.0),  # --restart-pause 0: a Redis that loses no acknowledged write
])
def test_a_scheduler_that_met_a_restart_waits_for_the_slowest_worker_to_stop_its_pods(
        server: LossyRedis, stops_within: tuple[float, ...], restart_pause: float,
        want_pause: float) -> None:
    conn = connect(server.url, prefix=PREFIX)
    store = Client(connection=connect(server.url, prefix=PREFIX)).store
    for i, seconds in enumerate(stops_within):
        store.nodes.register(f"n{i}", pool="p", capacity={"cpu": 1000}, labels={}, devices=(),
                             now=time.time(), stops_within=seconds)
    service = SchedulerService(conn, SchedulerOptions(
        identity="s1", timing=Timing(batch=0.0, poll=0.05, restart_pause=restart_pause)))
    step_until(service, "a leader", lambda: service.leader is not None)
    server.mark()
    server.crash()
    met = time.monotonic()
    service.step()
    waited = time.monotonic() - met
    assert service.leader is None
    assert want_pause <= waited < want_pause + 0.5


def test_a_connection_that_meets_a_restarted_server_fails_once_for_a_guarded_client(
        server: LossyRedis) -> None:
    """Only the scheduler guards its connections: a client holding no state drawn from the
    store (a worker, the CLI) reconnects as redis-py does."""
    guarded = connect(server.url, prefix=PREFIX)
    guarded.restarts.guard(guarded.store)
    plain = connect(server.url, prefix=PREFIX)
    guarded.text.set("k", "1")
    plain.text.set("k", "1")
    server.mark()
    server.crash()

    assert plain.text.get("k") == "1"
    with pytest.raises(ServerRestarted, match="restarted"):
        guarded.text.get("k")
    with pytest.raises(ServerRestarted):  # until the client says it dropped what it knew
        guarded.raw.get("k")
    guarded.restarts.accept()
    assert guarded.text.get("k") == "1"
    assert guarded.raw.get("k") == b"1"
