"""Keys: every shape under one prefix, names that cannot break a key, pod ids."""

from __future__ import annotations

import re

import pytest

from queueing.store.keys import BadKey, Keys, PodRef, check_node_name

POD = PodRef("ns/train", 3, 1)


@pytest.mark.parametrize(("build", "want"), [
    (lambda k: k.objects("ClusterQueue"), "p:objects:ClusterQueue"),
    (lambda k: k.namespaces, "p:namespaces"),
    (lambda k: k.config_generation, "p:config:generation"),
    (lambda k: k.workloads, "p:workloads"),
    (lambda k: k.unfinished, "p:workloads-unfinished"),
    (lambda k: k.unfinished_marker, "p:workloads-unfinished-complete"),
    (lambda k: k.workload("ns/train"), "p:workload:ns/train"),
    (lambda k: k.history("ns/train"), "p:workload:ns/train:history"),
    (lambda k: k.pod(POD), "p:pod:ns/train:3:1"),
    (lambda k: k.log(POD), "p:log:ns/train:3:1"),
    (lambda k: k.dispatched("manager-1"), "p:dispatched:manager-1"),
    (lambda k: k.nodes, "p:nodes"),
    (lambda k: k.node("gpu-1"), "p:node:gpu-1"),
    (lambda k: k.node_pods("gpu-1"), "p:node:gpu-1:pods"),
    (lambda k: k.node_queue("gpu-1"), "p:node:gpu-1"),
    (lambda k: k.events, "p:events"),
    (lambda k: k.lease, "p:scheduler:lease"),
    (lambda k: k.fence, "p:scheduler:fence"),
    (lambda k: k.schedulers, "p:schedulers"),
    (lambda k: k.requests("team-a"), "p:requests:team-a"),
    (lambda k: k.answer("team-a", "r1"), "p:answer:team-a:r1"),
    (lambda k: k.answers("team-a"), "p:answers:team-a"),
])
def test_each_key_shape(build, want) -> None:
    assert build(Keys("p")) == want


def test_every_key_matches_the_prefix_pattern() -> None:
    keys = Keys("team.a")
    pattern = re.compile(keys.pattern().replace(".", r"\.").replace("*", ".*"))
    for key in (keys.workload("a/b"), keys.pod(POD), keys.node_pods("n"), keys.lease):
        assert pattern.fullmatch(key), key


@pytest.mark.parametrize("prefix", ["", "a b", ":x", "x*y"])
def test_bad_prefixes_are_refused(prefix: str) -> None:
    with pytest.raises(BadKey, match="prefix"):
        Keys(prefix)


@pytest.mark.parametrize(("name", "want_ok"), [
    ("gpu-1", True), ("a.b", True), ("Node1", False), ("n:1", False), ("-n", False), ("", False),
])
def test_node_names(name: str, want_ok: bool) -> None:
    if want_ok:
        assert check_node_name(name) == name
    else:
        with pytest.raises(BadKey, match="node name"):
            check_node_name(name)


def test_pod_ids_round_trip() -> None:
    assert PodRef.parse(POD.id) == POD


@pytest.mark.parametrize("text", ["ns/w:1", "w:1:2", "ns/w:x:1", "ns/w:1:"])
def test_bad_pod_ids(text: str) -> None:
    with pytest.raises(BadKey, match="not a pod id"):
        PodRef.parse(text)


def test_job_ids_are_deterministic_rq_ids_per_prefix_and_pods() -> None:
    a, b = Keys("a"), Keys("b")
    other = PodRef("ns/train", 3, 0)
    assert a.start_job_id([POD, other]) == a.start_job_id([other, PodRef("ns/train", 3, 1)])
    assert a.start_job_id([POD]) != b.start_job_id([POD])
    assert a.start_job_id([POD]) != a.start_job_id([PodRef("ns/train", 4, 1)])
    assert a.start_job_id([POD]) != a.start_job_id([POD, other])
    assert re.fullmatch(r"[A-Za-z0-9_-]+", a.start_job_id([POD, other]))
