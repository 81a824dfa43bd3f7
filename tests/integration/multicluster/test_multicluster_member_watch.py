"""Observing a Kubernetes member: paged lists once, then watches (an emulated member).

What is asserted is what the member's API server sees — the requests, their
selectors and pages — and that changes made between observations show up.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import kmock
import pytest

from kuota.federation import member_watch
from kuota.federation.kubernetes_member import KubernetesMember
from kuota.federation.member import Observation
from tests.emulator import Emulator, kubeconfig
from tests.integration.multicluster.fleet import node

Body = dict[str, Any]
PODS = kmock.resource("", "v1", "pods")
NODES = kmock.resource("", "v1", "nodes")
JOBS = kmock.resource("batch", "v1", "jobs")


@pytest.fixture(autouse=True)
def small_pages(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(member_watch, "PAGE", 2)
    yield
    member_watch.close_all()


def pod(name: str, node_name: str | None, cpu: str = "1", phase: str = "Running") -> Body:
    spec: Body = {"containers": [{"name": "c", "image": "x",
                                  "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec,
            "status": {"phase": phase}}


def requests(api: Emulator, action: Any, resource: Any) -> list[dict[str, str]]:
    return [dict(r.params) for r in api.handler[action, resource]]


def used(seen: Observation) -> dict[str, int]:
    return {n.name: dict(n.requested).get("cpu", 0) for n in seen.nodes}


def member(api: Emulator) -> KubernetesMember:
    return KubernetesMember(kubeconfig(api.url))


class TestSteadyState:
    def test_nodes_and_pods_are_listed_once_in_pages_then_watched(self,
                                                                  k8s_api: Emulator) -> None:
        api = k8s_api
        for name in ("n1", "n2", "n3"):
            api.create(node(name, 8))
        for i in range(5):
            api.create(pod(f"p{i}", "n1"))
        first = member(api).observe("mgr")
        assert used(first) == {"n1": 5000, "n2": 0, "n3": 0}
        pages = requests(api, kmock.action.LIST, PODS)
        assert len(pages) == 3 and all(p["limit"] == "2" for p in pages)
        assert "continue" not in pages[0] and all("continue" in p for p in pages[1:])
        for _ in range(3):
            member(api).observe("mgr")
        # steady state: no more lists of nodes or pods, one list of our copies per look
        assert len(requests(api, kmock.action.LIST, PODS)) == 3
        assert len(requests(api, kmock.action.LIST, NODES)) == 2
        assert len(requests(api, kmock.action.LIST, JOBS)) == 4
        watches = requests(api, kmock.action.WATCH, PODS) + requests(api, kmock.action.WATCH,
                                                                    NODES)
        assert len(watches) == 2
        assert all(w["allowWatchBookmarks"] == "true" and w["resourceVersion"] for w in watches)

    def test_only_bound_unfinished_pods_are_asked_for(self, k8s_api: Emulator) -> None:
        member(k8s_api).observe("mgr")
        for query in requests(k8s_api, kmock.action.LIST, PODS) + \
                requests(k8s_api, kmock.action.WATCH, PODS):
            assert query["fieldSelector"] == \
                "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
        assert requests(k8s_api, kmock.action.LIST, JOBS)[0]["labelSelector"] == \
            "kuota.dev/origin=mgr"

    def test_changes_between_observations_show_up(self, k8s_api: Emulator) -> None:
        api = k8s_api
        api.create(node("n1", 8))
        api.create(pod("running", "n1", "2"))
        api.create(pod("ending", "n1", "3"))
        assert used(member(api).observe("mgr")) == {"n1": 5000}
        api.create(node("n2", 8))
        api.create(pod("new", "n2", "4"))
        api.create(pod("unbound", None, "1"))
        api.patch("v1", "Pod", "ending", {"status": {"phase": "Succeeded"}},
                  namespace="default", subresource="status")
        api.delete("v1", "Pod", "running", "default")
        # A terminating pod still holds its node's room (as kube-scheduler counts it) ...
        api.wait_for(lambda: used(member(api).observe("mgr")) == {"n1": 2000, "n2": 4000},
                     what="the changes in the next observations")
        api.delete("v1", "Pod", "running", "default", grace_period=0)  # ... until it is gone
        api.wait_for(lambda: used(member(api).observe("mgr")) == {"n1": 0, "n2": 4000},
                     what="the terminated pod gone from the observation")
        assert len(requests(api, kmock.action.LIST, PODS)) == 1


class TestRecovery:
    def test_a_watch_too_far_behind_lists_again(self) -> None:
        with Emulator(history=5) as api:
            api.create(node("n1", 8))
            assert used(member(api).observe("mgr")) == {"n1": 0}
            api.stop()  # the watches break; meanwhile the member changes a lot
            for i in range(8):
                api.create(pod(f"p{i}", "n1"))
            api.start()
            api.wait_for(lambda: used(member(api).observe("mgr")) == {"n1": 8000},
                         what="the pods, after a new list")
            # the old version is gone from the history: the pods were listed again
            starts = [q for q in requests(api, kmock.action.LIST, PODS) if "continue" not in q]
            assert len(starts) == 2

    def test_a_member_that_cannot_be_watched_fails_its_observations(self,
                                                                    k8s_api: Emulator) -> None:
        k8s_api.faults.fail(status=403, verbs={"watch"}, plural="pods", times=100,
                            message="pods is forbidden: cannot watch")
        with pytest.raises(Exception, match="403"):
            member(k8s_api).observe("mgr")

    def test_an_unreachable_member_fails_at_once(self, k8s_api: Emulator) -> None:
        member(k8s_api).observe("mgr")
        k8s_api.stop()
        with pytest.raises(Exception, match=r"Connection refused|Max retries"):
            member(k8s_api).observe("mgr")


class TestPages:
    """read_pages against a server whose continue token expires mid-list."""

    def test_an_expired_continue_token_starts_the_list_over(self) -> None:
        answers = [
            {"items": [{"n": 1}, {"n": 2}], "metadata": {"continue": "t1",
                                                         "resourceVersion": "10"}},
            member_watch.ApiException(status=410, reason="Expired"),
            {"items": [{"n": 1}, {"n": 2}], "metadata": {"continue": "t2",
                                                         "resourceVersion": "20"}},
            {"items": [{"n": 3}], "metadata": {"resourceVersion": "20"}},
        ]
        asked: list[str | None] = []

        class Answer:
            def __init__(self, data: Body) -> None:
                import json
                self.data = json.dumps(data).encode()

        def call(**query: Any) -> Answer:
            asked.append(query["_continue"])
            answer = answers.pop(0)
            if isinstance(answer, Exception):
                raise answer
            return Answer(answer)

        items, version = member_watch.read_pages(call)
        assert (items, version) == ([{"n": 1}, {"n": 2}, {"n": 3}], "20")
        assert asked == [None, "t1", None, "t2"]

    def test_a_first_page_that_fails_is_an_error(self) -> None:
        def call(**query: Any) -> Any:
            raise member_watch.ApiException(status=410, reason="Expired")

        with pytest.raises(member_watch.ApiException):
            member_watch.read_pages(call)
