"""Watch streams: from a resourceVersion, with selectors, bookmarks, timeouts and ends."""

from __future__ import annotations

import kubernetes.client as k8s
import kubernetes.watch
import pytest

from tests.emulator import MERGE_PATCH, Emulator, api_client
from tests.emulator.clients import WatchStream, call

CMS = "/api/v1/namespaces/default/configmaps"


def cm(name: str, **labels: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "labels": labels}}


def events(stream: WatchStream, count: int) -> list[tuple[str, str]]:
    got = []
    for _ in range(count):
        event = stream.next()
        assert event is not None, f"the stream ended after {got}"
        got.append((event["type"], event["object"]["metadata"]["name"]))
    return got


class TestFromAResourceVersion:
    def test_streams_only_what_happened_after_it(self, k8s_api: Emulator) -> None:
        k8s_api.create(cm("old"))
        listed = call(k8s_api.url, "GET", CMS).data
        rv = listed["metadata"]["resourceVersion"]
        k8s_api.create(cm("new"))  # after the list, before the watch: must not be lost
        k8s_api.patch("v1", "ConfigMap", "old", {"data": {"a": "1"}}, namespace="default")
        k8s_api.delete("v1", "ConfigMap", "new", "default")
        with WatchStream(k8s_api.url, f"{CMS}?watch=true&resourceVersion={rv}") as stream:
            assert stream.response.getheader("Content-Type") == "application/json"
            assert events(stream, 3) == [("ADDED", "new"), ("MODIFIED", "old"),
                                         ("DELETED", "new")]
            k8s_api.create(cm("live"))
            assert events(stream, 1) == [("ADDED", "live")]

    def test_versions_in_events_grow(self, k8s_api: Emulator) -> None:
        rv = k8s_api.store.resource_version
        for name in ("a", "b"):
            k8s_api.create(cm(name))
        with WatchStream(k8s_api.url, f"{CMS}?watch=true&resourceVersion={rv}") as stream:
            first, second = stream.next(), stream.next()
        assert first and second
        assert int(rv) < int(first["object"]["metadata"]["resourceVersion"]) < \
            int(second["object"]["metadata"]["resourceVersion"])

    def test_without_a_version_the_current_objects_come_first(self, k8s_api: Emulator) -> None:
        k8s_api.create(cm("a"))
        with WatchStream(k8s_api.url, f"{CMS}?watch=true") as stream:
            assert events(stream, 1) == [("ADDED", "a")]

    def test_initial_events_end_with_a_bookmark(self, k8s_api: Emulator) -> None:
        k8s_api.create(cm("a"))
        path = f"{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
        with WatchStream(k8s_api.url, path) as stream:
            assert events(stream, 1) == [("ADDED", "a")]
            bookmark = stream.next()
        assert bookmark and bookmark["type"] == "BOOKMARK"
        assert bookmark["object"]["metadata"]["annotations"] == {
            "k8s.io/initial-events-end": "true"}

    def test_a_too_old_version_is_an_error_event_410(self) -> None:
        with Emulator(history=2) as api:
            for name in "abcd":
                api.create(cm(name))
            with WatchStream(api.url, f"{CMS}?watch=true&resourceVersion=1") as stream:
                event = stream.next()
                assert event and event["type"] == "ERROR" and event["object"]["code"] == 410
                assert stream.next() is None


class TestFilters:
    def test_selectors_turn_changes_into_added_and_deleted(self, k8s_api: Emulator) -> None:
        k8s_api.create(cm("a", app="web"))
        rv = k8s_api.store.resource_version
        with WatchStream(k8s_api.url, f"{CMS}?watch=true&resourceVersion={rv}"
                                      "&labelSelector=app%3Dweb") as stream:
            k8s_api.patch("v1", "ConfigMap", "a", {"metadata": {"labels": {"app": "db"}}},
                          namespace="default")
            k8s_api.create(cm("b", app="db"))
            k8s_api.patch("v1", "ConfigMap", "b", {"metadata": {"labels": {"app": "web"}}},
                          namespace="default")
            k8s_api.patch("v1", "ConfigMap", "b", {"data": {"x": "1"}}, namespace="default")
            assert events(stream, 3) == [("DELETED", "a"), ("ADDED", "b"), ("MODIFIED", "b")]

    def test_a_single_object_and_other_namespaces(self, k8s_api: Emulator) -> None:
        rv = k8s_api.store.resource_version
        with WatchStream(k8s_api.url, f"{CMS}?watch=true&resourceVersion={rv}"
                                      "&fieldSelector=metadata.name%3Db") as stream:
            k8s_api.create(cm("a"))
            k8s_api.create(dict(cm("b"), metadata={"name": "b", "namespace": "kube-system"}))
            k8s_api.create(cm("b"))
            k8s_api.patch("v1", "ConfigMap", "b", {"data": {"x": "1"}}, namespace="default")
            assert events(stream, 2) == [("ADDED", "b"), ("MODIFIED", "b")]


class TestStreamEnds:
    def test_timeout_seconds_ends_the_stream(self, k8s_api: Emulator) -> None:
        with WatchStream(k8s_api.url, f"{CMS}?watch=true&timeoutSeconds=0.2") as stream:
            assert stream.next() is None

    def test_bookmarks_are_sent_when_quiet(self) -> None:
        with Emulator(bookmark_interval=0.05) as api, \
                WatchStream(api.url, f"{CMS}?watch=true&allowWatchBookmarks=true") as stream:
            event = stream.next()
            assert event and event["type"] == "BOOKMARK"
            assert event["object"]["metadata"]["resourceVersion"] == \
                str(api.store.resource_version)

    def test_stopping_the_server_ends_open_streams(self, k8s_api: Emulator) -> None:
        with WatchStream(k8s_api.url, f"{CMS}?watch=true", timeout=5) as stream:
            k8s_api.stop()
            assert stream.next() is None


class TestClients:
    def test_the_kubernetes_client_watch(self, k8s_api: Emulator) -> None:
        with api_client(k8s_api.url) as client:
            core = k8s.CoreV1Api(client)
            rv = core.list_namespaced_config_map("default").metadata.resource_version
            k8s_api.create(cm("a"))
            call(k8s_api.url, "PATCH", f"{CMS}/a", {"data": {"k": "v"}}, content_type=MERGE_PATCH)
            seen = []
            for event in kubernetes.watch.Watch().stream(
                    core.list_namespaced_config_map, "default", resource_version=rv,
                    timeout_seconds=1):
                seen.append((event["type"], event["object"].metadata.name))
                if len(seen) == 2:
                    break
        assert seen == [("ADDED", "a"), ("MODIFIED", "a")]


@pytest.mark.parametrize("as_table", [False, True])
def test_watch_events_can_be_tables(k8s_api: Emulator, as_table: bool) -> None:
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json" if as_table \
        else "application/json"
    with WatchStream(k8s_api.url, f"{CMS}?watch=true", headers={"Accept": accept}) as stream:
        k8s_api.create(cm("a"))
        event = stream.next()
    assert event is not None
    if as_table:
        assert event["object"]["kind"] == "Table"
        assert event["object"]["rows"][0]["cells"][0] == "a"
    else:
        assert event["object"]["kind"] == "ConfigMap"
