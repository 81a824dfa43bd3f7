"""A manager and two member clusters, each an emulated API server, with the real operator.

:class:`Fleet` starts three emulators — the manager (kuota's CRDs, queues, the
operator's webhook) and members ``a`` and ``b`` (nodes only) — writes the
MemberClusters (``a`` through a kubeconfig file, ``b`` through a Secret in the
operator's namespace) and runs the operator with short intervals: members are
observed every 0.2 s, ``staleAfter`` is 1 s and ``workerLostTimeout`` 2 s.

Member ``a``: two 8-cpu nodes. Member ``b``: two 8-cpu nodes and one with 4
``nvidia.com/gpu`` labelled ``gpu-model=a100`` — so flavor ``a100`` exists only
there, and a gang of three 5-cpu pods fits in ``a``'s sum (16 cpu) but not node
by node.
"""

from __future__ import annotations

import base64
import contextlib
import pathlib
from collections.abc import Iterator
from typing import Any

import yaml

from tests.emulator import Emulator, emulators, kubeconfig, write_kubeconfig
from tests.emulator.clients import call
from tests.emulator.samples import finished_job_status
from tests.integration.operator import harness as h

Body = dict[str, Any]
JOBS = "/apis/batch/v1/namespaces/default/jobs"
ORIGIN = "kuota.dev/origin"


def node(name: str, cpu: int, *, gpus: int = 0, labels: dict[str, str] | None = None) -> Body:
    allocatable = {"cpu": str(cpu), "memory": "64Gi", "pods": "110"}
    if gpus:
        allocatable["nvidia.com/gpu"] = str(gpus)
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  **(labels or {})}},
            "spec": {}, "status": {"allocatable": allocatable, "capacity": allocatable}}


def member(name: str, *, location: str, location_type: str, cost: list[Body] | None = None,
           datasets: list[str] | None = None) -> Body:
    return {"apiVersion": h.API, "kind": "MemberCluster", "metadata": {"name": name},
            "spec": {"kubeConfig": {"location": location, "locationType": location_type},
                     "cost": cost or [], "datasets": datasets or []}}


def queues() -> list[Body]:
    check = {"apiVersion": h.API, "kind": "AdmissionCheck", "metadata": {"name": "dispatch"},
             "spec": {"controllerName": "kuota.dev/multicluster",
                      "parameters": {"apiGroup": "kuota.dev", "kind": "MultiClusterConfig",
                                     "name": "fleet"}}}
    config = {"apiVersion": h.API, "kind": "MultiClusterConfig", "metadata": {"name": "fleet"},
              "spec": {"clusters": ["a", "b"], "staleAfter": "1s",
                       "workerLostTimeout": "2s"}}
    strategy = {"admissionChecksStrategy": {"admissionChecks": [{"name": "dispatch"}]}}
    return [h.flavor("cpu"), h.flavor("a100", labels={"gpu-model": "a100"}), check, config,
            h.cluster_queue("cpu-team", quotas={"cpu": {"cpu": 200}}, **strategy),
            h.cluster_queue("gpu-team", quotas={"a100": {"cpu": 64, "nvidia.com/gpu": 16}},
                            **strategy),
            h.local_queue("main", "cpu-team"), h.local_queue("gpu", "gpu-team")]


def gpu_job(name: str, gpus: int) -> Body:
    body = h.job(name, queue="gpu", cpu="1")
    body["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)},
        "limits": {"nvidia.com/gpu": str(gpus)}}
    return body


class Fleet:
    def __init__(self, manager: Emulator, a: Emulator, b: Emulator,
                 workdir: pathlib.Path) -> None:
        self.manager, self.a, self.b = manager, a, b
        self.members = {"a": a, "b": b}
        self.workdir = workdir
        self.certs = workdir
        self.operator: h.Running | None = None

    def restart_operator(self) -> None:
        """Stop the operator process's loops and start a new one (a new leader: fresh
        engine, dispatcher and task queue; only the API objects carry over)."""
        assert self.operator is not None
        self.operator.__exit__(None, None, None)
        self.operator = h.Running(self.manager, self.certs, **OPERATOR_OPTIONS).__enter__()

    def setup(self) -> None:
        api = self.manager
        h.install_crds(api)
        h.namespace(api, "default")
        h.namespace(api, "kuota-system")
        self.a.create(node("a-1", 8))
        self.a.create(node("a-2", 8))
        self.b.create(node("b-1", 8))
        self.b.create(node("b-2", 8))
        self.b.create(node("b-gpu", 8, gpus=4, labels={"gpu-model": "a100"}))
        write_kubeconfig(self.a.url, self.workdir / "member-a.kubeconfig")
        secret = yaml.safe_dump(kubeconfig(self.b.url)).encode()
        api.create({"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": "member-b", "namespace": "kuota-system"},
                    "data": {"kubeconfig": base64.b64encode(secret).decode()}})
        api.apply(*queues())
        self.set_members()

    def set_members(self, *, a: Body | None = None, b: Body | None = None) -> None:
        """(Re)write both MemberClusters; keyword dicts add ``cost`` / ``datasets``."""
        self.manager.apply(
            member("a", location=str(self.workdir / "member-a.kubeconfig"),
                   location_type="Path", **(a or {})),
            member("b", location="member-b", location_type="Secret", **(b or {})))

    # -- acting ------------------------------------------------------------------------------
    def submit(self, body: Body) -> None:
        answer = call(self.manager.url, "POST", JOBS, body)
        assert answer.status == 201, answer.data

    def copy(self, where: str, name: str) -> Body | None:
        return self.members[where].find("batch/v1", "Job", name, "default")

    def copies(self, name: str) -> dict[str, Body]:
        return {m: found for m in self.members if (found := self.copy(m, name)) is not None}

    def placed(self, name: str, timeout: float = 15) -> str:
        """The member a copy of Job ``name`` appears in (exactly one)."""
        found = h.wait(self.manager, lambda: self.copies(name), f"a copy of {name}", timeout)
        assert len(found) == 1, f"{name} has copies in {sorted(found)}"
        return next(iter(found))

    def finish(self, where: str, name: str, *, failed: bool = False) -> None:
        """Play the member's Job controller: the copy succeeded (or failed)."""
        status = finished_job_status(failed=failed,
                                     message="the pod failed" if failed else "done")
        self.members[where].patch("batch/v1", "Job", name, {"status": status},
                                  namespace="default", subresource="status")

    def finish_all(self, *names: str) -> None:
        """Complete each Job's copy and wait until its copies are gone (its usage freed)."""
        for name in names:
            self.finish(self.placed(name), name)
        for name in names:
            h.wait(self.manager, lambda n=name: h.is_true(h.workload_of(self.manager, n),
                                                           "Finished"), f"{name} to finish")
            h.wait(self.manager, lambda n=name: not self.copies(n), f"{name}'s copy deleted")

    def workload(self, name: str) -> Body:
        found = h.workload_of(self.manager, name)
        assert found is not None
        return found

    def member_status(self, name: str) -> Body:
        return self.manager.get(h.API, "MemberCluster", name).get("status") or {}


#: The operator's options in a fleet: short intervals, and a short backoff between
#: failed creates of a copy (so a refusing member is given up on within seconds).
OPERATOR_OPTIONS: dict[str, Any] = {"member_interval": 0.2, "federation_tick": 0.05,
                                    "manager_id": "manager-1", "create_backoff": 0.2}


@contextlib.contextmanager
def running_fleet(certs: pathlib.Path, workdir: pathlib.Path) -> Iterator[Fleet]:
    with emulators(3) as (manager, a, b):
        fleet = Fleet(manager, a, b, workdir)
        fleet.setup()
        fleet.certs = certs
        fleet.operator = h.Running(manager, certs, **OPERATOR_OPTIONS).__enter__()
        try:
            h.wait(manager, lambda: all(
                h.is_true({"status": fleet.member_status(m)}, "Active") for m in ("a", "b")),
                "both members Active")
            yield fleet
        finally:
            fleet.operator.__exit__(None, None, None)
