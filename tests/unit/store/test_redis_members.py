"""Pool members and topology feeding in the Redis leader, and the store writes they need."""

from __future__ import annotations

from store_builders import lead, new_store, node, submit

from admission.engine import Engine
from kuota.service.members import PoolMembers
from kuota.service.nodeview import NodeView
from kuota.service.topofeed import TopologyFeed, lost_pins
from queueing.store.workloads import AdmitRequest
from quota import api
from quota.config import FlavorConfig
from quota.lifecycle import State
from quota.workload import Admission, PodSetAdmission, PodSetInfo, WorkloadInfo


def member(name: str, pool: str | None = None) -> api.MemberCluster:
    spec = {"pool": pool} if pool else {"kubeConfig": {"location": "k", "locationType": "Path"}}
    obj = api.parse_object({"apiVersion": "kuota.dev/v1alpha1", "kind": "MemberCluster",
                            "metadata": {"name": name}, "spec": spec}, source="test")
    assert isinstance(obj, api.MemberCluster)
    return obj


def topology() -> api.Topology:
    obj = api.parse_object({"apiVersion": "kuota.dev/v1alpha1", "kind": "Topology",
                            "metadata": {"name": "racks"},
                            "spec": {"levels": [{"nodeLabel": "rack"}]}}, source="test")
    assert isinstance(obj, api.Topology)
    return obj


def test_a_pool_with_no_ready_node_is_an_inactive_member() -> None:
    store = new_store()
    node(store, "e1", pool="east")
    view = NodeView(store)
    members = PoolMembers(Engine(), [member("east", "east"), member("west", "west"),
                                     member("k8s")], [])
    members.refresh(view, [], now=10.0)
    east, west = members.dispatcher.members["east"], members.dispatcher.members["west"]
    assert (east.health.active, east.health.last_seen, [n.name for n in east.nodes]) == (
        True, 10.0, ["e1"])
    assert (west.health.active, west.health.reason) == (False, "NoReadyNodes")
    assert "k8s" not in members.dispatcher.members, "Kubernetes members are the operator's"
    assert members.pools() == {"east": "east", "west": "west"}


def test_workloads_on_a_member_that_lost_every_node_are_named() -> None:
    engine = Engine()
    members = PoolMembers(engine, [member("east", "east")], [])
    info = WorkloadInfo("ns", "w", "lq", (PodSetInfo("main", 1, {"cpu": 1000}),))
    engine.restore(info, Admission("cq", (PodSetAdmission("main", 1, {"cpu": "f"},
                                                          {"cpu": 1000}),), cluster="east"),
                   1.0)
    store = new_store()
    members.refresh(NodeView(store), [], now=5.0)  # east has no node at all
    assert list(members.lost()) == ["ns/w"]
    assert "lost all its nodes" in members.lost()["ns/w"]


def test_decisions_are_written_once_per_change() -> None:
    members = PoolMembers(Engine(), [], [])
    doc = {"workload": "ns/w", "cluster": None, "clusters": []}
    members.dispatcher.decisions["ns/w"] = doc
    [(key, attempt, text)] = members.unwritten({"ns/w": 3})
    assert (key, attempt, '"cluster":null' in text) == ("ns/w", 3, True)
    assert members.unwritten({"ns/w": 3}) == []
    members.dispatcher.decisions["ns/w"] = dict(doc, cluster="east")
    assert len(members.unwritten({"ns/w": 3})) == 1


def test_topology_feed_follows_ready_nodes_and_counts_other_pods() -> None:
    store = new_store()
    node(store, "n1")
    node(store, "n2")
    engine = Engine()
    engine.apply(FlavorConfig("tas", {}, topology_name="racks"))
    feed = TopologyFeed(engine, [topology()])
    view = NodeView(store)
    view.refresh()
    feed.sync(view)
    assert sorted(engine.topology.nodes) == ["n1", "n2"]
    assert engine.topology.nodes["n1"].labels["kubernetes.io/hostname"] == "n1"
    holder = lead(store)
    store.nodes.expire(holder, "n2", timeout=0.0, now=100.0)
    view.refresh()
    feed.sync(view)
    assert sorted(engine.topology.nodes) == ["n1"]


def test_no_topology_aware_flavor_feeds_nothing() -> None:
    store = new_store()
    node(store, "n1")
    engine = Engine()
    view = NodeView(store)
    view.refresh()
    TopologyFeed(engine, [topology()]).sync(view)
    assert engine.topology.nodes == {}


def test_gangs_pinned_to_lost_nodes_are_found() -> None:
    store = new_store()
    node(store, "n1")
    engine = Engine()
    info = WorkloadInfo("ns", "w", "lq", (PodSetInfo("main", 2, {"cpu": 1000}),))
    engine.restore(info, Admission("cq", (PodSetAdmission(
        "main", 2, {"cpu": "f"}, {"cpu": 2000}, nodes=(("n1", 1), ("n9", 1))),)), 1.0)
    view = NodeView(store)
    view.refresh()
    assert lost_pins(engine, ["ns/w"], view.records) == {"ns/w": ["n9"]}


def test_a_stored_reservation_is_admitted_in_the_same_attempt() -> None:
    store = new_store()
    holder = lead(store)
    submit(store)
    reserve = AdmitRequest("ns/w", 0, Admission("cq", ()), 0, "d1", admit=False)
    assert store.workloads.admit_many(holder, [reserve], now=2.0) == ["ok:1"]
    assert store.workloads.set_dispatch(holder, [("ns/w", 1, '{"cluster":"east"}')]) == ["ok"]
    admitted = AdmitRequest("ns/w", 1, Admission("cq", (), cluster="east"), 0, "d2")
    assert store.workloads.admit_many(holder, [admitted], now=3.0) == ["ok:1"]
    record = store.workloads.get("ns/w")
    assert record.state is State.ADMITTED and record.attempt == 1
    assert record.admission is not None and record.admission.cluster == "east"
    assert record.dispatch() == {"cluster": "east"}
    # A decision for an attempt that is over is refused.
    assert store.workloads.set_dispatch(holder, [("ns/w", 0, "{}")]) == ["stale:1"]


def test_pending_reasons_reach_reservations_waiting_for_checks() -> None:
    store = new_store()
    holder = lead(store)
    submit(store, "ns/r")
    reserve = AdmitRequest("ns/r", 0, Admission("cq", ()), 0, "d9", admit=False)
    assert store.workloads.admit_many(holder, [reserve], now=2.0) == ["ok:1"]
    assert store.workloads.set_reasons(holder, [("ns/r", 1, "AdmissionCheck", "no member")]) \
        == "ok:1"
    assert store.workloads.get("ns/r").message == "no member"


def test_a_reservation_restored_before_the_dispatcher_existed_is_dispatched_on_resume() -> None:
    """A new leader restores workloads from Redis before it registers the dispatcher: the
    check the old leader had not answered is asked again once it is."""
    from quota.api.multiclusterconfig import MultiClusterConfig
    from quota.config import AdmissionCheckConfig
    from tests.builders import ClusterQueueBuilder, local_queue
    engine = Engine()
    engine.apply(FlavorConfig("f", {}))
    engine.apply(AdmissionCheckConfig("dispatch", "kuota.dev/multicluster",
                                      {"kind": "MultiClusterConfig", "name": "fleet"}))
    engine.apply(ClusterQueueBuilder("cq").flavor("f", {"cpu": 4})
                 .set(admission_checks=(("dispatch", ()),)).obj())
    engine.apply(local_queue("cq", name="lq"))
    info = WorkloadInfo("ns", "w", "lq", (PodSetInfo("main", 1, {"cpu": 1000}),))
    admission = Admission("cq", (PodSetAdmission("main", 1, {"cpu": "f"}, {"cpu": 1000}),))
    record = engine.restore(info, admission, 1.0, admitted=False)
    assert record.state is State.QUOTA_RESERVED and record.checks == {
        "dispatch": ("Pending", "")}, "no controller yet: the check waits"
    fleet = api.parse_object({"apiVersion": "kuota.dev/v1alpha1", "kind": "MultiClusterConfig",
                              "metadata": {"name": "fleet"}, "spec": {"clusters": ["east"]}},
                             source="test")
    assert isinstance(fleet, MultiClusterConfig)
    members = PoolMembers(engine, [member("east", "east")], [fleet])
    store = new_store()
    node(store, "e1", pool="east")
    members.refresh(NodeView(store), [], now=2.0)
    engine.ask_pending_checks(2.0)  # what the leader does once the dispatcher is registered
    assert record.state is State.ADMITTED
    assert record.admission is not None and record.admission.cluster == "east"


def test_the_check_reasons_tell_how_many_changed() -> None:
    """A check's verdict that changes only its message changes nothing the engine counts:
    the leader walks the pending reasons again only when the members say one changed."""
    from quota.config import AdmissionCheckConfig
    from tests.builders import ClusterQueueBuilder, local_queue
    engine = Engine()
    engine.apply(FlavorConfig("f", {}))
    engine.apply(AdmissionCheckConfig("dispatch", "kuota.dev/multicluster", {}))
    engine.apply(ClusterQueueBuilder("cq").flavor("f", {"cpu": 4})
                 .set(admission_checks=(("dispatch", ()),)).obj())
    engine.apply(local_queue("cq", name="lq"))
    info = WorkloadInfo("ns", "w", "lq", (PodSetInfo("main", 1, {"cpu": 1000}),))
    record = engine.restore(info, Admission("cq", (PodSetAdmission(
        "main", 1, {"cpu": "f"}, {"cpu": 1000}),)), 1.0, admitted=False)
    members = PoolMembers(engine, [], [])
    assert members.reasons() == 1
    assert (record.pending_reason, members.reasons()) == ("AdmissionCheck", 0)
    engine.set_check("ns/w", "dispatch", "Pending", 2.0, "no member cluster can run it")
    assert members.reasons() == 1
    assert record.pending_message == "dispatch: Pending: no member cluster can run it"
    engine.set_check("ns/w", "dispatch", "Ready", 3.0)
    assert (record.state, members.reasons(), record.pending_reason) == (
        State.ADMITTED, 1, None)  # (the check's reason taken back)
    assert members.reasons() == 0
