"""The federation controller's bookkeeping (kuota.federation.federation), without I/O.

A stand-in controller (objects, problems, Job links) and task runner; the
federation's methods are called as its loop and the engine's events call them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from admission.events import Kind, WorkloadEvent
from kuota.federation.federation import Federation
from kuota.federation.member import Observation
from kuota.operator.settings import Options
from multicluster.controller import Dispatcher
from quota.lifecycle import State

Body = dict[str, Any]
API = "kuota.dev/v1alpha1"


@dataclass
class Objects:
    by_kind: dict[str, dict[str, Body]] = field(default_factory=dict)

    def all(self, kind: str) -> list[Body]:
        return list(self.by_kind.get(kind, {}).values())

    def get(self, kind: str, key: str) -> Body | None:
        return self.by_kind.get(kind, {}).get(key)

    def put(self, kind: str, key: str, body: Body) -> None:
        self.by_kind.setdefault(kind, {})[key] = body


class Runner:
    def __init__(self) -> None:
        self.submitted: list[str] = []

    def busy(self, key: str) -> bool:
        return False

    def submit(self, key: str, *args: Any, **kwargs: Any) -> bool:
        self.submitted.append(key)
        return True


class Writer:
    def __init__(self) -> None:
        self.later: list[str] = []
        self.persisted: dict[str, Any] = {}

    def write_status_later(self, key: str, build: Any) -> None:
        self.later.append(key)


def member_body(name: str, spec: Body | None = None) -> Body:
    return {"apiVersion": API, "kind": "MemberCluster", "metadata": {"name": name},
            "spec": spec if spec is not None else {"pool": name}}


def federation(*members: str) -> tuple[Federation, Any]:
    objects = Objects()
    for name in members:
        objects.put("MemberCluster", name, member_body(name))
    owners: dict[str, str] = {}  # Workload -> what it stands for (Kind:ns/name)
    controller = SimpleNamespace(
        options=Options(manager_id="m", redis_url="redis://127.0.0.1:1"), objects=objects,
        problems={}, owners=SimpleNamespace(owner_of_workload=owners), engine=None,
        on_change=lambda: None)
    engine = SimpleNamespace(cache=SimpleNamespace(flavors={}), controllers={},
                             assign_cluster=lambda key, cluster: None, records={})
    fed = Federation(controller)  # type: ignore[arg-type]
    fed.attach(engine)  # type: ignore[arg-type]
    controller.engine = engine
    fed.runner = Runner()  # type: ignore[assignment]
    return fed, controller


def test_attach_drops_deletes_a_stopped_runner_will_never_report() -> None:
    fed, _ = federation("a")
    fed._deleting["delete:a:ns/w"] = ("ns/w", "a")
    fed.holders["ns/w"] = {"a"}
    fed.attach(fed.controller.engine)  # type: ignore[arg-type]
    assert fed._deleting == {}
    fed.runner = Runner()  # type: ignore[assignment]
    fed._observed(fed.members["a"], Observation((), ()), now=1.0)
    assert "ns/w" not in fed.holders  # a's observation lists no copy: not held, entry gone


def test_a_delete_on_one_member_does_not_keep_another_as_holder() -> None:
    fed, _ = federation("a", "b")
    fed._deleting["delete:a:ns/w"] = ("ns/w", "a")
    fed.holders["ns/w"] = {"a", "b"}
    fed._observed(fed.members["b"], Observation((), ()), now=1.0)
    assert fed.holders["ns/w"] == {"a"}  # a's delete is in flight; b holds nothing
    fed._observed(fed.members["a"], Observation((), ()), now=1.0)
    assert fed.holders["ns/w"] == {"a"}  # until the delete reports back


def test_a_finished_workload_leaves_nothing_behind() -> None:
    fed, controller = federation("a")
    assert fed.dispatcher is not None
    fed.writer = Writer()  # type: ignore[assignment]
    controller.objects.put("Workload", "ns/w", {"metadata": {"name": "w"}})
    fed.dispatcher.decisions["ns/w"] = {"cluster": "a"}
    fed._write_decisions()
    fed.holders["ns/w"] = set()
    fed.events([WorkloadEvent(1.0, "ns/w", Kind.FINISHED)])
    assert "ns/w" not in fed.dispatcher.decisions
    assert "ns/w" not in fed._decisions_written
    assert "ns/w" not in fed.holders


def test_a_decision_is_written_once_its_workload_is_seen() -> None:
    fed, controller = federation("a")
    assert fed.dispatcher is not None
    writer = fed.writer = Writer()  # type: ignore[assignment]
    fed.dispatcher.decisions["ns/w"] = {"cluster": "a"}
    fed._write_decisions()
    assert writer.later == []
    controller.objects.put("Workload", "ns/w", {"metadata": {"name": "w"}})
    fed._write_decisions()
    assert writer.later == ["ns/w"]
    fed._write_decisions()
    assert writer.later == ["ns/w"]  # once per decision


def test_an_invalid_member_cluster_is_a_visible_problem() -> None:
    fed, controller = federation()
    fed.observe("MemberCluster", member_body("bad", {"pool": "x", "kubeConfig": 3}), False)
    assert "MemberCluster/bad" in controller.problems
    fed.observe("MemberCluster", member_body("bad"), False)
    assert "MemberCluster/bad" not in controller.problems
    assert "bad" in fed.members


def test_a_job_that_cannot_be_copied_is_reported_once_until_it_changes() -> None:
    fed, controller = federation("a")
    writer = fed.writer = Writer()  # type: ignore[assignment]
    admission = object()
    controller.engine.records["ns/w"] = SimpleNamespace(admission=admission, state=State.ADMITTED)
    writer.persisted["ns/w"] = admission
    controller.owners.owner_of_workload["ns/w"] = "Job:ns/job"
    job: Body = {"metadata": {"name": "job", "namespace": "ns", "resourceVersion": "1"},
                 "spec": {"template": "not an object"}}
    controller.objects.put("Job", "ns/job", job)
    engine = controller.engine
    assert fed._remote_body(engine, "ns/w", "a") is None
    assert "spec.template" in controller.problems["Job/ns/job"]
    controller.problems.clear()
    assert fed._remote_body(engine, "ns/w", "a") is None
    assert controller.problems == {}  # same Job version: not tried again
    job["metadata"]["resourceVersion"] = "2"
    assert fed._remote_body(engine, "ns/w", "a") is None
    assert "Job/ns/job" in controller.problems  # changed, tried, still bad
    fed.events([WorkloadEvent(2.0, "ns/w", Kind.FINISHED)])
    assert controller.problems == {} and fed._unbuildable == {}


def test_dispatcher_forget_drops_the_decision() -> None:
    dispatcher = Dispatcher(flavors=lambda: {})
    dispatcher.decisions["ns/w"] = {"cluster": "a"}
    dispatcher.excluded["ns/w"] = {"a": "refused"}
    dispatcher.released("ns/w")
    assert "ns/w" in dispatcher.decisions  # evicted: kept for the next attempt's status
    dispatcher.forget("ns/w")
    assert "ns/w" not in dispatcher.decisions and "ns/w" not in dispatcher.excluded
