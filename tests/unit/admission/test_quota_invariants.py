"""Property tests: random cohorts and workload streams never break the quota rules.

After every step (arrivals, finishes, scheduling) usage is recomputed from the
admitted workloads — not read from the tree's own bookkeeping — and checked:

* no ClusterQueue uses more than nominalQuota + borrowingLimit;
* the cohort as a whole uses no more than the quota its members offer;
* no queue's guaranteed part (nominal - lendingLimit) is used by others;
* every admitted workload has every pod of every pod set, with a flavor for
  every resource it requests (no partial gangs).
"""

from __future__ import annotations

from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from admission.engine import Engine
from quota.config import ClusterQueueConfig
from quota.lifecycle import HOLDS_QUOTA
from quota.resources import FlavorResource
from tests.builders import ClusterQueueBuilder, WorkloadBuilder, flavor, local_queue

CPU = 1000
FLAVORS = ("x", "y")


@st.composite
def queue_specs(draw: st.DrawFn) -> list[ClusterQueueConfig]:
    specs = []
    for i in range(draw(st.integers(2, 4))):
        builder = ClusterQueueBuilder(f"cq{i}").cohort("co")
        for j, name in enumerate(FLAVORS):
            nominal = draw(st.integers(0, 8))
            borrowing = draw(st.one_of(st.none(), st.integers(0, 6)))
            lending = draw(st.one_of(st.none(), st.integers(0, nominal)))
            builder.flavor(name, {"cpu": nominal}, group=None if j == 0 else 0,
                           borrowing=None if borrowing is None else {"cpu": borrowing},
                           lending=None if lending is None else {"cpu": lending})
        builder.set(when_can_borrow=draw(st.sampled_from(["MayStopSearch", "TryNextFlavor"])))
        specs.append(builder.obj())
    return specs


steps = st.lists(st.tuples(
    st.sampled_from(["submit", "submit", "finish"]),
    st.integers(0, 3),          # queue index
    st.integers(1, 4),          # pods in set 1
    st.integers(0, 3),          # pods in set 2 (0 = one pod set only)
    st.integers(1, 3),          # cpu per pod
    st.integers(0, 2),          # priority
), min_size=1, max_size=40)


def check_invariants(engine: Engine, specs: list[ClusterQueueConfig]) -> None:
    usage: dict[str, dict[FlavorResource, int]] = defaultdict(lambda: defaultdict(int))
    for record in engine.records.values():
        if record.state not in HOLDS_QUOTA:
            continue
        adm = record.admission
        assert adm is not None
        admitted = {ps.name: ps for ps in adm.pod_sets}
        for ps in record.info.pod_sets:
            assert ps.name in admitted, f"{record.info.key}: pod set {ps.name} missing"
            assert admitted[ps.name].count == ps.count, f"{record.info.key}: partial gang"
            assert set(admitted[ps.name].flavors) >= {r for r, v in ps.requests.items() if v}
        for fr, amount in adm.usage().items():
            usage[adm.cluster_queue][fr] += amount
    for name in FLAVORS:
        fr = FlavorResource(name, "cpu")
        offered = 0
        total = 0
        for cq in specs:
            cell = cq.quotas[fr]
            used = usage[cq.name][fr]
            total += used
            if cell.borrowing_limit is not None:
                assert used <= cell.nominal + cell.borrowing_limit, (cq.name, fr, used)
            guaranteed = 0 if cell.lending_limit is None else cell.nominal - cell.lending_limit
            offered += cell.nominal - guaranteed
            # Others may only use what this queue lends.
            others_used = sum(usage[o.name][fr] for o in specs if o is not cq)
            others_own = sum(o.quotas[fr].nominal for o in specs if o is not cq)
            lent = cell.nominal - guaranteed
            assert others_used <= others_own + lent, (cq.name, fr, others_used)
        guaranteed_total = sum(
            min(usage[cq.name][fr], cq.quotas[fr].nominal - (cq.quotas[fr].lending_limit
                                                            if cq.quotas[fr].lending_limit
                                                            is not None else cq.quotas[fr].nominal))
            for cq in specs)
        assert total - guaranteed_total <= offered, (fr, total, offered)


def engine_for(specs: list[ClusterQueueConfig], *, wait_for_stop: bool = False) -> Engine:
    """An engine with both flavors, ``specs``, and a LocalQueue named after each."""
    engine = Engine(wait_for_stop=wait_for_stop)
    for name in FLAVORS:
        engine.apply(flavor(name))
    for cq in specs:
        engine.apply(cq)
        engine.apply(local_queue(cq.name, name=cq.name))
    return engine


@settings(max_examples=60, deadline=None)
@given(specs=queue_specs(), ops=steps)
def test_random_streams_keep_quota_invariants(specs: list[ClusterQueueConfig],
                                              ops: list[tuple[str, int, int, int, int, int]]
                                              ) -> None:
    engine = engine_for(specs)
    now = 0.0
    for n, (op, q, pods1, pods2, cpu, priority) in enumerate(ops):
        now += 1
        cq = specs[q % len(specs)]
        if op == "submit":
            builder = WorkloadBuilder(f"w{n}", queue=cq.name).pod_set("a", count=pods1, cpu=cpu)
            if pods2:
                builder.pod_set("b", count=pods2, cpu=cpu)
            engine.submit(builder.priority(priority).created(now).obj())
        else:
            running = [k for k, r in engine.records.items() if r.state in HOLDS_QUOTA]
            if running:
                engine.finish(running[q % len(running)], now)
        engine.run_until_idle(now)
        check_invariants(engine, specs)
        # The engine ran until idle: every waiting workload was tried and set aside.
        assert engine.queues.heads() == []
