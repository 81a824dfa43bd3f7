"""The emulator as a server: pause, stop and restart, several at once, seeding from tests."""

from __future__ import annotations

import threading
import time
import urllib.error

import kubernetes.client as k8s
import pytest
import urllib3

from tests.emulator import Emulator, api_client, emulators
from tests.emulator.clients import call

CMS = "/api/v1/namespaces/default/configmaps"


def cm(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}}


class TestPause:
    def test_requests_wait_until_resumed(self, k8s_api: Emulator) -> None:
        k8s_api.pause()
        answers: list[int] = []
        caller = threading.Thread(target=lambda: answers.append(
            call(k8s_api.url, "POST", CMS, cm("a"), timeout=10).status))
        caller.start()
        caller.join(0.3)
        assert caller.is_alive() and answers == []  # hanging, like a partitioned network
        assert k8s_api.find("v1", "ConfigMap", "a", "default") is None
        k8s_api.resume()
        caller.join(5)
        assert answers == [201]

    def test_a_client_timeout_while_paused(self, k8s_api: Emulator) -> None:
        k8s_api.pause()
        try:
            with pytest.raises((TimeoutError, urllib.error.URLError)):
                call(k8s_api.url, "GET", CMS, timeout=0.2)
        finally:
            k8s_api.resume()
        assert call(k8s_api.url, "GET", CMS).status == 200


class TestStopAndStart:
    def test_a_stopped_server_refuses_and_comes_back_with_its_objects(
            self, k8s_api: Emulator) -> None:
        k8s_api.create(cm("kept"))
        url = k8s_api.url
        k8s_api.stop()
        with pytest.raises(urllib.error.URLError):
            call(url, "GET", CMS, timeout=2)
        k8s_api.create(cm("while-down"))  # the store is still there for the test
        k8s_api.start()
        assert k8s_api.url == url
        names = [item["metadata"]["name"] for item in call(url, "GET", CMS).data["items"]]
        assert names == ["kept", "while-down"]

    def test_the_kubernetes_client_sees_the_outage(self, k8s_api: Emulator) -> None:
        with api_client(k8s_api.url) as client:
            core = k8s.CoreV1Api(client)
            core.list_namespace()
            k8s_api.stop()
            with pytest.raises(urllib3.exceptions.MaxRetryError, match=r"(?i)refused"):
                core.list_namespace(_request_timeout=2)
            k8s_api.start()
            assert len(core.list_namespace().items) == 4


class TestSeveralClusters:
    def test_three_emulators_are_independent(self) -> None:
        with emulators(3) as (a, b, c):
            assert len({a.url, b.url, c.url}) == 3
            a.create(cm("only-in-a"))
            c.faults.fail(status=500, verbs={"list"})
            assert [i["metadata"]["name"] for i in call(a.url, "GET", CMS).data["items"]] == \
                ["only-in-a"]
            assert call(b.url, "GET", CMS).data["items"] == []
            assert call(c.url, "GET", CMS).status == 500
            c.stop()
            assert call(a.url, "GET", CMS).status == 200 and call(b.url, "GET", CMS).status == 200


class TestSeeding:
    def test_apply_creates_then_merges_status_too(self, k8s_api: Emulator) -> None:
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                "status": {"capacity": {"cpu": "4"}}}
        k8s_api.apply(node)
        k8s_api.apply(dict(node, metadata={"name": "n1", "labels": {"zone": "a"}},
                           status={"allocatable": {"cpu": "3"}}))
        stored = k8s_api.get("v1", "Node", "n1")
        assert stored["metadata"]["labels"] == {"zone": "a"}
        assert stored["status"] == {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "3"}}

    def test_wait_for_fails_with_a_clear_message(self, k8s_api: Emulator) -> None:
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="the configmap"):
            k8s_api.wait_for(lambda: k8s_api.find("v1", "ConfigMap", "x", "default"),
                             timeout=0.1, what="the configmap")
        assert time.monotonic() - started < 1

    def test_unknown_kinds_are_named(self, k8s_api: Emulator) -> None:
        with pytest.raises(LookupError, match="'Gadget'"):
            k8s_api.get("v1", "Gadget", "x")

    def test_old_requests_are_dropped_past_the_limit(self) -> None:
        with Emulator(keep_requests=3) as api:
            for _ in range(5):
                call(api.url, "GET", "/version")
            assert len(api.handler) == 3
            assert [api.status_of(r) for r in api.handler] == [200, 200, 200]
