"""The dashboard's incremental Redis reader gives the picture a full rebuild gives.

:class:`~kuota.dashboard.redis_reader.RedisReader` re-reads only what changed;
after every kind of change — submissions, cancellations, a quota edit, a
scheduler admitting and reporting reasons — its overview must equal the one
built from :func:`kuota.service.rebuild.load`, which reads everything, as a new
leader does.
"""

from __future__ import annotations

import sys

import pytest

from kuota import explanation
from kuota.client import Client
from kuota.dashboard import model
from kuota.dashboard.redis_reader import RedisReader
from kuota.service import rebuild
from queueing.store import Store
from tests.integration.redis.harness import CQ, local_cluster, node, queues, wait_for

pytestmark = pytest.mark.redis

SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]


def full(store: Store) -> model.Overview:
    loaded = rebuild.load(store)
    facts = {k: model.Facts(explanation.from_record(r), r.placement)
             for k, r in loaded.workloads.items()}
    problems = [f"{n}: {t}" for n, t in sorted(loaded.configs.problems.items())]
    problems += [f"workload {k} is set aside: {t}" for k, t in sorted(loaded.invalid.items())]
    return model.overview(loaded.engine, facts, source="t", problems=problems)


class Incremental:
    """Overviews as the dashboard builds them: from the reader, reusing the pending lists
    of the ClusterQueues the reader says did not change."""

    def __init__(self, store: Store) -> None:
        self.reader = RedisReader(store)
        self.last: model.Overview | None = None

    def __call__(self) -> model.Overview:
        loaded = self.reader.load()
        self.last = model.overview(loaded.engine, loaded.facts, source="t",
                                   problems=sorted(loaded.problems), previous=self.last,
                                   changed=loaded.changed)
        return self.last


def test_incremental_reads_equal_a_full_rebuild(redis_server_url: str,
                                                redis_prefix: str) -> None:
    client = Client(redis_server_url, prefix=redis_prefix)
    client.apply(queues(CQ("a", {"cpu": 4}, cohort="co"), CQ("b", {"cpu": 4}, cohort="co")))
    incremental = Incremental(client.store)
    reader = incremental.reader
    for i in range(3):
        client.submit(SLEEP, queue="default/lq-a", name=f"w{i}", requests={"cpu": 3})
    assert incremental() == full(client.store)
    first = reader.load()
    assert reader.load() is first  # nothing changed: nothing rebuilt

    client.workload("default/w1").cancel()
    client.submit(SLEEP, queue="default/lq-b", name="late", requests={"cpu": 1}, priority=5)
    client.apply(queues(CQ("a", {"cpu": 8}, cohort="co"), CQ("b", {"cpu": 4}, cohort="co")))
    assert incremental() == full(client.store)
    assert [p.key for p in incremental().pending["a"]] == ["default/w0", "default/w2"]

    with local_cluster(redis_server_url, redis_prefix, [node("pool", "n1", "cpu=16")]):
        wait_for("all three admitted", lambda: sum(
            r.state.value == "Admitted" for r in client.store.workloads.all()) == 3)
        wait_for("placed", lambda: all(r.placement for r in client.store.workloads.all()
                                       if r.state.value == "Admitted"))
        ours = incremental()
        assert ours == full(client.store)
        assert ours.totals() == model.Counts(pending=0, reserving=3, admitted=3)

        client.workload("default/w0").cancel()
        client.submit(SLEEP, queue="default/lq-a", name="big", requests={"cpu": 9})
        wait_for("a reason for the big one", lambda: "quota" in client.store.workloads.get(
            "default/big").message)
        wait_for("w0 finished", lambda: client.store.workloads.get(
            "default/w0").state.value == "Finished")
        # The scheduler still publishes reasons meanwhile: the two reads agree once it is quiet.
        wait_for("the incremental read to equal a full one",
                 lambda: incremental() == full(client.store), timeout=5)
        ours = incremental()
        assert [p.key for p in ours.pending["a"]] == ["default/big"]
        # Finished workloads are not read again and again: a pool retains a week of them.
        assert {"default/w0", "default/w1"}.isdisjoint(reader.fingerprints())
        assert "default/big" in reader.fingerprints()
