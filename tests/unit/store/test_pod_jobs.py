"""Start jobs carry each gang's nodes once per node, not once per pod: a gang of n pods on
m nodes sends m·n node names, not n² (10,000 pods: 10⁸ names, gigabytes in Redis)."""

from __future__ import annotations

import json

import pytest

from kuota.service.jobs import PodJob, decode, encode
from queueing.store import PodRef


def _gang(key: str, pods: int, nodes: int) -> list[PodJob]:
    placed = tuple(f"node-{i % nodes}" for i in range(pods))
    return [PodJob("p", PodRef(key, 1, i).id, placed[i], 1, pods, "main", placed, ("true",))
            for i in range(pods)]


@pytest.mark.parametrize(("pods", "nodes"), [(1, 1), (40, 4), (2_000, 10)])
def test_a_node_job_names_each_gang_mate_once(pods: int, nodes: int) -> None:
    jobs = [j for j in _gang("ns/a", pods, nodes) if j.node == "node-0"]
    jobs += _gang("ns/b", 3, 1)
    docs, gangs = encode(jobs)
    assert sorted(gangs) == ["ns/a#1", "ns/b#1"]
    assert len(json.dumps([docs, gangs])) < 200 * len(jobs) + 10 * (pods + 3)
    assert decode(*json.loads(json.dumps([docs, gangs]))) == jobs


def test_a_job_from_an_older_scheduler_is_still_read() -> None:
    [job] = _gang("ns/a", 1, 1)
    doc = {**job.to_dict(), "peers": list(job.peers)}
    del doc["gang"]
    assert decode([doc]) == [job]


def test_start_jobs_read_the_same_whichever_json_serializer_wrote_them() -> None:
    """Jobs are written with orjson; a worker of an older kuota reads them with rq's
    JSONSerializer, and jobs an older scheduler wrote that way are read now."""
    from rq.serializers import JSONSerializer

    from kuota.service.jobs import JobSerializer, PodJob

    odd = PodJob("p", PodRef("ns/é", 2, 0).id, "node-0", 7, 1, "main", ("node-0",),
                 ("echo", "ünï"), {"K": "v"}, {"cpu": 250, "memory": 2**40}, "/tmp")
    jobs = [*_gang("ns/a", 3, 2), odd]
    data = ("kuota.service.pod.start_pods", None, list(encode(jobs)), {})
    for written, read in ((JobSerializer, JSONSerializer), (JSONSerializer, JobSerializer)):
        func, _, args, _ = read.loads(written.dumps(data))
        assert func == "kuota.service.pod.start_pods"
        assert decode(*args) == jobs


def test_the_gang_of_a_pod_is_its_workload_and_attempt() -> None:
    [job] = _gang("team-a/train-7", 1, 1)
    assert job.gang == "team-a/train-7#1"
    assert PodJob("p", PodRef("ns/w", 12, 3).id, "n", 1, 4, "main", (), ("x",)).gang == "ns/w#12"
