"""Dispatcher: the kuota.dev/multicluster admission check running inside the engine."""

from __future__ import annotations

import random
from typing import Any

import pytest

from admission.engine import Engine
from admission.events import Kind
from multicluster.controller import CONTROLLER_NAME, Dispatcher
from multicluster.hints import CLUSTER_SELECTOR
from multicluster.model import ClusterInfo
from quota.api.multiclusterconfig import MultiClusterConfig
from quota.config import AdmissionCheckConfig
from quota.lifecycle import State
from tests.builders import ClusterQueueBuilder, WorkloadBuilder, local_queue
from tests.unit.multicluster.multicluster_builders import FLAVORS, GPU, NOW, gpu_member

CHECK = "mc"


def mcc(clusters: list[str], name: str = "fleet", **spec: Any) -> MultiClusterConfig:
    return MultiClusterConfig.model_validate({
        "apiVersion": "kuota.dev/v1alpha1", "kind": "MultiClusterConfig",
        "metadata": {"name": name}, "spec": {"clusters": clusters, **spec}})


class Setup:
    """An engine with one GPU ClusterQueue gated by the dispatcher, and its members."""

    def __init__(self, *members: ClusterInfo, config: str = "fleet",
                 annotations: dict[str, dict[str, str]] | None = None,
                 with_config: bool = True, refused: dict[str, str] | None = None) -> None:
        self.engine = e = Engine(rng=random.Random(1))
        e.apply(FLAVORS["a100"])
        e.apply(AdmissionCheckConfig(CHECK, CONTROLLER_NAME,
                                     {"apiGroup": "kuota.dev", "kind": "MultiClusterConfig",
                                      "name": config}))
        e.apply(ClusterQueueBuilder("cq").flavor("a100", {GPU: 64})
                .set(admission_checks=((CHECK, ()),)).obj())
        e.apply(local_queue("cq"))
        notes, refusals = annotations or {}, refused or {}
        self.dispatcher = d = Dispatcher(flavors=lambda: e.cache.flavors,
                                         assign=e.assign_cluster,
                                         annotations=lambda info: notes.get(info.name, {}),
                                         refuse=lambda info: refusals.get(info.name))
        e.controllers[CONTROLLER_NAME] = d
        self.names = [m.name for m in members]
        if with_config:
            d.set_config(mcc(self.names))
        for m in members:
            d.set_member(m)

    def submit(self, name: str, pods: int = 1, gpus: int = 4, at: float = 0.0) -> str:
        info = WorkloadBuilder(name).pod_set(count=pods, gpu=gpus).created(at).obj()
        return self.engine.submit(info).info.key

    def run(self, now: float = NOW) -> None:
        self.engine.run_until_idle(now)

    def apply_poll(self, now: float = NOW) -> list[str]:
        verdicts = self.dispatcher.poll(now)
        for v in verdicts:
            self.engine.set_check(v.key, v.check, v.state, now, v.message)
        return [f"{v.key}:{v.state}" for v in verdicts]

    def used(self, member: str) -> int:
        return sum(n.requested.get(GPU, 0) for n in self.dispatcher.members[member].nodes)


def test_chosen_cluster_is_on_the_record_the_cache_and_the_admitted_event() -> None:
    s = Setup(gpu_member("eu", (8, 8)), gpu_member("us", (8, 2)))
    key = s.submit("train", pods=2, gpus=4)
    s.run()
    record = s.engine.records[key]
    assert record.state is State.ADMITTED
    assert record.admission is not None and record.admission.cluster == "eu"
    entry = s.engine.cache.holding(key)
    assert entry is not None and entry.admission.cluster == "eu"
    admitted = [ev for ev in s.engine.drain_outbox() if ev.kind is Kind.ADMITTED]
    assert [ev.admission.cluster for ev in admitted if ev.admission] == ["eu"]
    state, message = record.checks[CHECK]
    assert state == "Ready" and message.startswith("dispatched to eu")
    decision = s.dispatcher.decision(key)
    assert decision is not None and decision.cluster == "eu"
    assert s.used("eu") == 8_000 and s.dispatcher.dispatched[key].cluster == "eu"


@pytest.mark.parametrize(("workloads", "want_clusters"), [
    # Usage is recorded per dispatch, so LoadBalance spreads equal workloads.
    ([("a", 8), ("b", 8)], ["eu", "us"]),
    ([("a", 8), ("b", 8), ("c", 8), ("d", 8)], ["eu", "us", "eu", "us"]),
    # A gang of two 8-GPU pods only fits a member with two empty nodes.
    ([("a", 4), ("b", 16)], ["eu", "us"]),
])
def test_dispatch_counts_what_it_placed(workloads: list[tuple[str, int]],
                                        want_clusters: list[str]) -> None:
    s = Setup(gpu_member("eu", (8, 8)), gpu_member("us", (8, 8)))
    keys = []
    for i, (name, gpus) in enumerate(workloads):
        pods = max(1, gpus // 8)
        keys.append(s.submit(name, pods=pods, gpus=gpus // pods, at=float(i)))
        s.run()
    got = [s.engine.records[k].admission.cluster for k in keys]  # type: ignore[union-attr]
    assert got == want_clusters


def test_waits_pending_until_a_member_frees_capacity() -> None:
    s = Setup(gpu_member("eu", (8,)))
    first = s.submit("first", gpus=8, at=0)
    second = s.submit("second", gpus=8, at=1)
    s.run()
    assert s.engine.records[first].state is State.ADMITTED
    record = s.engine.records[second]
    assert record.state is State.QUOTA_RESERVED
    state, message = record.checks[CHECK]
    assert state == "Pending" and "CapacityEstimate" in message
    assert s.dispatcher.waiting == (second,)
    assert s.apply_poll() == []  # nothing changed: no verdict
    s.engine.finish(first, NOW + 5)
    s.dispatcher.released(first)
    assert s.used("eu") == 0
    assert s.apply_poll(NOW + 5) == [f"{second}:Ready"]
    assert record.state is State.ADMITTED and record.admission is not None
    assert record.admission.cluster == "eu" and s.dispatcher.waiting == ()


def test_released_frees_the_member_and_forgets_waiting_ones() -> None:
    s = Setup(gpu_member("eu", (8,)))
    first = s.submit("first", gpus=6, at=0)
    second = s.submit("second", gpus=6, at=1)
    s.run()
    assert s.used("eu") == 6_000
    s.engine.evict(second, NOW, "Preempted")
    s.dispatcher.released(second)
    assert s.dispatcher.waiting == ()
    s.engine.evict(first, NOW, "Preempted")
    s.dispatcher.released(first)
    assert s.used("eu") == 0 and first not in s.dispatcher.dispatched
    assert s.dispatcher.decision(first) is not None  # kept for `kuota why`


def test_poll_drops_workloads_that_left_the_check() -> None:
    s = Setup(gpu_member("eu", (8,)))
    s.submit("first", gpus=8, at=0)
    second = s.submit("second", gpus=8, at=1)
    s.run()
    s.engine.evict(second, NOW, "Preempted")  # the adapter forgot to call released()
    s.dispatcher.members["eu"] = gpu_member("eu", (8, 8))
    assert s.apply_poll() == []
    assert s.dispatcher.waiting == () and second not in s.dispatcher.dispatched


@pytest.mark.parametrize(("annotations", "want_state", "want_cluster", "want_in_message"), [
    ({CLUSTER_SELECTOR: "region=us"}, State.ADMITTED, "us", "dispatched to us"),
    ({CLUSTER_SELECTOR: "region=ap"}, State.QUOTA_RESERVED, None, "ClusterAffinity"),
    ({CLUSTER_SELECTOR: "region in (eu"}, State.INACTIVE, None, CLUSTER_SELECTOR),
])
def test_hints_from_annotations(annotations: dict[str, str], want_state: State,
                                want_cluster: str | None, want_in_message: str) -> None:
    s = Setup(gpu_member("eu", labels={"region": "eu"}),
              gpu_member("us", labels={"region": "us"}), annotations={"w": annotations})
    key = s.submit("w")
    s.run()
    record = s.engine.records[key]
    assert record.state is want_state
    assert (record.admission.cluster if record.admission else None) == want_cluster
    message = (record.pending_message or "") + "".join(m for _, m in record.checks.values())
    assert want_in_message in message


@pytest.mark.parametrize(("refused", "with_config", "want_state", "want_check"), [
    ({}, True, State.ADMITTED, "Ready"),
    # the adapter cannot carry it out: rejected at once, not kept waiting for a member
    ({"w": "Job ns/w cannot be dispatched: its spec.managedBy is not ..."}, True,
     State.INACTIVE, "Rejected"),
    ({"w": "Job ns/w cannot be dispatched"}, False, State.INACTIVE, "Rejected"),
    ({"other": "Job ns/other cannot be dispatched"}, True, State.ADMITTED, "Ready"),
])
def test_a_workload_the_adapter_refuses_is_rejected(refused: dict[str, str], with_config: bool,
                                                    want_state: State, want_check: str) -> None:
    s = Setup(gpu_member("eu"), refused=refused, with_config=with_config)
    key = s.submit("w")
    s.run()
    record = s.engine.records[key]
    assert record.state is want_state
    assert record.checks[CHECK][0] == want_check
    if want_check == "Rejected":
        assert "cannot be dispatched" in (record.pending_message or "")
        assert key not in s.dispatcher.dispatched and s.used("eu") == 0
    else:
        assert record.admission is not None and record.admission.cluster == "eu"


def test_unknown_config_waits_until_it_is_set() -> None:
    s = Setup(gpu_member("eu"), with_config=False)
    key = s.submit("w")
    s.run()
    state, message = s.engine.records[key].checks[CHECK]
    assert state == "Pending" and "MultiClusterConfig fleet is not known" in message
    s.dispatcher.set_config(mcc(s.names))
    assert s.apply_poll() == [f"{key}:Ready"]
    assert s.engine.records[key].state is State.ADMITTED


def test_config_lists_the_candidates() -> None:
    s = Setup(gpu_member("eu"), gpu_member("us"))
    s.dispatcher.set_config(mcc(["us"]))
    key = s.submit("w")
    s.run()
    assert s.engine.records[key].admission.cluster == "us"  # type: ignore[union-attr]


def test_seen_refreshes_health_and_keeps_memos() -> None:
    s = Setup(gpu_member("eu", last_seen=0.0))
    key = s.submit("w")
    s.run()
    assert "Health" in s.engine.records[key].checks[CHECK][1]
    before = s.dispatcher.members["eu"]
    s.dispatcher.seen("eu", NOW)
    after = s.dispatcher.members["eu"]
    assert after.health.last_seen == NOW and after.layout is before.layout
    assert s.apply_poll() == [f"{key}:Ready"]


def test_assign_cluster_needs_a_workload_holding_quota() -> None:
    s = Setup(gpu_member("eu", (8,)))
    key = s.submit("w", gpus=8)
    with pytest.raises(ValueError, match="holds no quota"):
        s.engine.assign_cluster(key, "eu")


@pytest.mark.parametrize(("adopted", "want_used", "want_next"), [
    # A restored workload running 6 of eu-0's 8 GPUs: the next 4-GPU one goes to us.
    ({"eu-0": {GPU: 6_000}}, 6_000, "us"),
    # Its pods do not exist yet: nothing is counted (what the member shows is all there is).
    ({}, 0, "eu"),
    # Pods on a node the member no longer has are left out.
    ({"gone": {GPU: 8_000}}, 0, "eu"),
])
def test_adopt_counts_a_restored_dispatch(adopted: dict[str, dict[str, int]], want_used: int,
                                          want_next: str) -> None:
    s = Setup(gpu_member("eu", (8,)), gpu_member("us", (8,)))
    s.dispatcher.adopt("ns/old", "eu", adopted)
    assert s.used("eu") == want_used and s.dispatcher.dispatched["ns/old"].cluster == "eu"
    key = s.submit("next", gpus=4)
    s.run()
    assert s.engine.records[key].admission.cluster == want_next  # type: ignore[union-attr]


def test_adopt_again_replaces_and_released_frees() -> None:
    s = Setup(gpu_member("eu", (8,)))
    s.dispatcher.adopt("ns/old", "eu", {"eu-0": {GPU: 2_000}})
    s.dispatcher.adopt("ns/old", "eu", {"eu-0": {GPU: 6_000}})  # more pods bound since
    assert s.used("eu") == 6_000
    s.dispatcher.released("ns/old")
    assert s.used("eu") == 0 and "ns/old" not in s.dispatcher.dispatched


def test_an_excluded_member_is_skipped_until_forgotten() -> None:
    s = Setup(gpu_member("eu", (8,)), gpu_member("us", (8,)))
    key = s.submit("w", gpus=4)
    s.dispatcher.exclude(key, "eu", "member eu refused the copy 5 times")
    s.run()
    record = s.engine.records[key]
    assert record.admission is not None and record.admission.cluster == "us"
    decision = s.dispatcher.decision(key)
    assert decision is not None
    refused = {r.cluster: r for r in decision.results if not r.feasible}
    assert refused["eu"].filtered_by == "Excluded"
    assert refused["eu"].reason == "member eu refused the copy 5 times"
    s.dispatcher.forget(key)
    assert key not in s.dispatcher.excluded and key not in s.dispatcher.dispatched
