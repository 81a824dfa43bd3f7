"""Writes through HTTP: the status codes, versions and rules a real API server has.

Each class covers one gap of stock kmock that the emulator closes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import kubernetes.client as k8s
import pytest

from tests.emulator import JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, Emulator, api_client
from tests.emulator.clients import call
from tests.emulator.samples import WIDGET_API, widget, widget_crd

CM_PATH = "/api/v1/namespaces/default/configmaps"
WIDGETS = "/apis/emu.kuota.dev/v1/namespaces/default/widgets"


@pytest.fixture
def core(k8s_api: Emulator) -> Iterator[k8s.CoreV1Api]:
    with api_client(k8s_api.url) as client:
        yield k8s.CoreV1Api(client)


@pytest.fixture
def widgets(k8s_api: Emulator) -> Emulator:
    k8s_api.create(widget_crd())
    return k8s_api


def configmap(name: str = "", **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {**({"name": name} if name else {}), **meta}, "data": {"k": "v"}}


class TestCreate:
    def test_answers_201_and_the_client_gets_the_object(self, k8s_api: Emulator,
                                                         core: k8s.CoreV1Api) -> None:
        created = core.create_namespaced_config_map("default", configmap("a"))
        assert created is not None and created.metadata.name == "a"
        assert created.metadata.uid and created.metadata.creation_timestamp
        reply = call(k8s_api.url, "POST", CM_PATH, configmap("b"))
        assert reply.status == 201 and reply.data["metadata"]["namespace"] == "default"

    def test_generate_name_appends_a_suffix(self, core: k8s.CoreV1Api) -> None:
        names = {core.create_namespaced_config_map("default", configmap(generateName="gen-"))
                 .metadata.name for _ in range(3)}
        assert len(names) == 3
        assert all(name.startswith("gen-") and len(name) == 9 for name in names)

    def test_the_namespace_comes_from_the_url(self, k8s_api: Emulator) -> None:
        call(k8s_api.url, "POST", "/api/v1/namespaces", {"metadata": {"name": "team"}})
        reply = call(k8s_api.url, "POST", "/api/v1/namespaces/team/configmaps", configmap("a"))
        assert reply.status == 201
        assert k8s_api.get("v1", "ConfigMap", "a", "team")["metadata"]["namespace"] == "team"

    @pytest.mark.parametrize(("path", "body", "want_status", "want_reason"), [
        (CM_PATH, configmap("a", namespace="other"), 400, "BadRequest"),
        ("/api/v1/namespaces/nowhere/configmaps", configmap("a"), 404, "NotFound"),
        (CM_PATH, configmap(), 422, "Invalid"),
        (CM_PATH, configmap("Not_A_Name"), 422, "Invalid"),
        (CM_PATH, configmap("a", labels={"k": "x" * 64}), 422, "Invalid"),
        (CM_PATH, {"kind": "Secret", "metadata": {"name": "a"}}, 400, "BadRequest"),
        ("/api/v1/widgets", configmap("a"), 404, "NotFound"),
    ])
    def test_rejects(self, k8s_api: Emulator, path: str, body: dict[str, Any],
                     want_status: int, want_reason: str) -> None:
        reply = call(k8s_api.url, "POST", path, body)
        assert (reply.status, reply.data["reason"]) == (want_status, want_reason)
        assert reply.data["kind"] == "Status" and reply.data["message"]

    def test_a_duplicate_is_409_already_exists(self, k8s_api: Emulator) -> None:
        call(k8s_api.url, "POST", CM_PATH, configmap("a"))
        reply = call(k8s_api.url, "POST", CM_PATH, configmap("a"))
        assert (reply.status, reply.data["reason"]) == (409, "AlreadyExists")
        assert reply.data["message"] == 'configmaps "a" already exists'

    def test_status_is_dropped_over_http_but_kept_when_seeding(self, widgets: Emulator) -> None:
        body = dict(widget("w1"), status={"phase": "Done"})
        assert "status" not in call(widgets.url, "POST", WIDGETS, body).data
        seeded = widgets.create(dict(widget("w2"), status={"phase": "Done"}))
        assert seeded["status"] == {"phase": "Done"}


class TestResourceVersions:
    def test_every_write_takes_a_new_version(self, k8s_api: Emulator) -> None:
        created = call(k8s_api.url, "POST", CM_PATH, configmap("a")).data
        patched = call(k8s_api.url, "PATCH", f"{CM_PATH}/a", {"data": {"k": "w"}},
                       content_type=MERGE_PATCH).data
        listed = call(k8s_api.url, "GET", CM_PATH).data
        versions = [int(created["metadata"]["resourceVersion"]),
                    int(patched["metadata"]["resourceVersion"])]
        assert versions[0] < versions[1] <= int(listed["metadata"]["resourceVersion"])

    def test_a_stale_update_is_409_conflict(self, core: k8s.CoreV1Api) -> None:
        first = core.create_namespaced_config_map("default", configmap("a"))
        first.data = {"k": "1"}
        core.replace_namespaced_config_map("a", "default", first)
        first.data = {"k": "2"}  # still carries the old resourceVersion
        with pytest.raises(k8s.ApiException) as caught:
            core.replace_namespaced_config_map("a", "default", first)
        assert caught.value.status == 409 and "has been modified" in caught.value.body
        assert core.read_namespaced_config_map("a", "default").data == {"k": "1"}

    def test_a_no_op_write_keeps_the_version(self, k8s_api: Emulator) -> None:
        created = call(k8s_api.url, "POST", CM_PATH, configmap("a")).data
        same = call(k8s_api.url, "PUT", f"{CM_PATH}/a", created).data
        assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]

    def test_put_on_a_custom_resource_needs_a_version(self, widgets: Emulator) -> None:
        call(widgets.url, "POST", WIDGETS, widget("w"))
        reply = call(widgets.url, "PUT", f"{WIDGETS}/w", widget("w", size=2))
        assert reply.status == 422 and "resourceVersion" in reply.data["message"]

    def test_generation_follows_the_spec_only(self, widgets: Emulator) -> None:
        created = call(widgets.url, "POST", WIDGETS, widget("w")).data
        labelled = call(widgets.url, "PATCH", f"{WIDGETS}/w", {"metadata": {"labels": {"a": "b"}}},
                        content_type=MERGE_PATCH).data
        resized = call(widgets.url, "PATCH", f"{WIDGETS}/w", {"spec": {"size": 5}},
                       content_type=MERGE_PATCH).data
        assert [created["metadata"]["generation"], labelled["metadata"]["generation"],
                resized["metadata"]["generation"]] == [1, 1, 2]


class TestPatch:
    @pytest.mark.parametrize(("content_type", "patch", "want_status", "want_data"), [
        (MERGE_PATCH, {"data": {"k": None, "n": "1"}}, 200, {"n": "1"}),
        (JSON_PATCH, [{"op": "add", "path": "/data/n", "value": "1"}], 200, {"k": "v", "n": "1"}),
        (JSON_PATCH, [{"op": "test", "path": "/metadata/resourceVersion", "value": "1"},
                      {"op": "remove", "path": "/data"}], 422, {"k": "v"}),
        (JSON_PATCH, [{"op": "remove", "path": "/data/absent"}], 422, {"k": "v"}),
        (STRATEGIC_PATCH, {"data": {"n": "1"}}, 200, {"k": "v", "n": "1"}),
        (MERGE_PATCH, {"metadata": {"resourceVersion": "1"}, "data": {}}, 409, {"k": "v"}),
        ("application/apply-patch+yaml", {"data": {}}, 415, {"k": "v"}),
    ])
    def test_formats(self, k8s_api: Emulator, content_type: str, patch: Any,
                     want_status: int, want_data: dict[str, str]) -> None:
        call(k8s_api.url, "POST", CM_PATH, configmap("a"))
        reply = call(k8s_api.url, "PATCH", f"{CM_PATH}/a", patch, content_type=content_type)
        assert reply.status == want_status, reply.data
        assert k8s_api.get("v1", "ConfigMap", "a", "default").get("data") == want_data

    def test_a_current_version_test_passes(self, k8s_api: Emulator) -> None:
        rv = call(k8s_api.url, "POST", CM_PATH, configmap("a")).data["metadata"]["resourceVersion"]
        ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": rv},
               {"op": "add", "path": "/metadata/finalizers", "value": ["f"]}]
        reply = call(k8s_api.url, "PATCH", f"{CM_PATH}/a", ops, content_type=JSON_PATCH)
        assert reply.status == 200 and reply.data["metadata"]["finalizers"] == ["f"]

    def test_strategic_merge_is_unsupported_for_custom_resources(self,
                                                                 widgets: Emulator) -> None:
        call(widgets.url, "POST", WIDGETS, widget("w"))
        reply = call(widgets.url, "PATCH", f"{WIDGETS}/w", {"spec": {"size": 2}},
                     content_type=STRATEGIC_PATCH)
        assert reply.status == 415

    def test_strategic_merge_of_a_deployment_keeps_other_containers(
            self, k8s_api: Emulator) -> None:
        k8s_api.create({"apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": {"name": "d", "namespace": "default"},
                        "spec": {"template": {"spec": {"containers": [
                            {"name": "a", "image": "1"}, {"name": "b", "image": "1"}]}}}})
        call(k8s_api.url, "PATCH", "/apis/apps/v1/namespaces/default/deployments/d",
             {"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "2"}]}}}},
             content_type=STRATEGIC_PATCH)
        found = k8s_api.get("apps/v1", "Deployment", "d", "default")
        assert [c["image"] for c in found["spec"]["template"]["spec"]["containers"]] == ["1", "2"]


class TestStatusSubresource:
    def test_the_main_resource_ignores_status(self, widgets: Emulator) -> None:
        widgets.create(dict(widget("w"), status={"phase": "Old"}))
        reply = call(widgets.url, "PATCH", f"{WIDGETS}/w",
                     {"spec": {"size": 7}, "status": {"phase": "New"}}, content_type=MERGE_PATCH)
        assert reply.data["spec"]["size"] == 7 and reply.data["status"] == {"phase": "Old"}

    def test_the_status_subresource_ignores_the_rest(self, widgets: Emulator) -> None:
        widgets.create(widget("w"))
        reply = call(widgets.url, "PATCH", f"{WIDGETS}/w/status",
                     {"spec": {"size": 7}, "status": {"phase": "New"},
                      "metadata": {"labels": {"x": "y"}}}, content_type=MERGE_PATCH)
        assert reply.data["status"] == {"phase": "New"} and reply.data["spec"]["size"] == 1
        assert "labels" not in reply.data["metadata"]
        assert reply.data["metadata"]["generation"] == 1

    def test_put_on_status_is_guarded_by_the_version(self, widgets: Emulator) -> None:
        obj = widgets.create(widget("w"))
        obj["status"] = {"phase": "A"}
        assert call(widgets.url, "PUT", f"{WIDGETS}/w/status", obj).status == 200
        obj["status"] = {"phase": "B"}  # stale now
        assert call(widgets.url, "PUT", f"{WIDGETS}/w/status", obj).status == 409
        assert widgets.get(WIDGET_API, "Widget", "w", "default")["status"] == {"phase": "A"}

    def test_no_status_subresource_means_404(self, k8s_api: Emulator) -> None:
        call(k8s_api.url, "POST", CM_PATH, configmap("a"))
        assert call(k8s_api.url, "GET", f"{CM_PATH}/a/status").status == 404


class TestDelete:
    def test_without_finalizers_the_object_goes(self, k8s_api: Emulator) -> None:
        call(k8s_api.url, "POST", CM_PATH, configmap("a"))
        reply = call(k8s_api.url, "DELETE", f"{CM_PATH}/a")
        assert reply.status == 200 and reply.data["metadata"]["name"] == "a"
        assert call(k8s_api.url, "GET", f"{CM_PATH}/a").status == 404

    def test_finalizers_hold_the_object_until_removed(self, k8s_api: Emulator) -> None:
        call(k8s_api.url, "POST", CM_PATH, configmap("a", finalizers=["x/y"]))
        marked = call(k8s_api.url, "DELETE", f"{CM_PATH}/a").data
        assert marked["metadata"]["deletionTimestamp"]
        again = call(k8s_api.url, "DELETE", f"{CM_PATH}/a").data
        assert again["metadata"]["resourceVersion"] == marked["metadata"]["resourceVersion"]
        call(k8s_api.url, "PATCH", f"{CM_PATH}/a", {"metadata": {"finalizers": None}},
             content_type=MERGE_PATCH)
        assert k8s_api.find("v1", "ConfigMap", "a", "default") is None

    def test_owned_objects_are_collected(self, k8s_api: Emulator) -> None:
        owner = k8s_api.create(configmap("owner", namespace="default"))
        owned = configmap("owned", namespace="default", ownerReferences=[
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
             "uid": owner["metadata"]["uid"]}])
        k8s_api.create(owned)
        k8s_api.create(configmap("bystander", namespace="default"))
        call(k8s_api.url, "DELETE", f"{CM_PATH}/owner")
        names = [cm["metadata"]["name"] for cm in k8s_api.list("v1", "ConfigMap", "default")]
        assert names == ["bystander"]

    def test_a_namespace_takes_its_objects(self, k8s_api: Emulator) -> None:
        k8s_api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}})
        k8s_api.create(configmap("a", namespace="t"))
        k8s_api.create(configmap("held", namespace="t", finalizers=["x/y"]))
        call(k8s_api.url, "DELETE", "/api/v1/namespaces/t")
        namespace = k8s_api.get("v1", "Namespace", "t")
        assert namespace["status"]["phase"] == "Terminating"
        assert [cm["metadata"]["name"] for cm in k8s_api.list("v1", "ConfigMap", "t")] == ["held"]
        k8s_api.patch("v1", "ConfigMap", "held", {"metadata": {"finalizers": []}}, namespace="t")
        assert k8s_api.find("v1", "Namespace", "t") is None

    def test_a_failed_precondition_is_409(self, k8s_api: Emulator) -> None:
        call(k8s_api.url, "POST", CM_PATH, configmap("a"))
        reply = call(k8s_api.url, "DELETE", f"{CM_PATH}/a",
                     {"kind": "DeleteOptions", "preconditions": {"uid": "other"}})
        assert reply.status == 409 and k8s_api.find("v1", "ConfigMap", "a", "default")


class TestLists:
    @pytest.fixture
    def pods(self, k8s_api: Emulator) -> Emulator:
        for name, labels, phase, ns in [
                ("a", {"app": "web"}, "Running", "default"),
                ("b", {"app": "db"}, "Pending", "default"),
                ("c", {"app": "web", "tier": "x"}, "Running", "kube-system")]:
            k8s_api.create({"apiVersion": "v1", "kind": "Pod", "status": {"phase": phase},
                            "metadata": {"name": name, "namespace": ns, "labels": labels}})
        return k8s_api

    @pytest.mark.parametrize(("path", "query", "want_names"), [
        ("/api/v1/pods", "", ["a", "b", "c"]),
        ("/api/v1/namespaces/default/pods", "", ["a", "b"]),
        ("/api/v1/pods", "labelSelector=app%3Dweb", ["a", "c"]),
        ("/api/v1/pods", "labelSelector=app%3Dweb,!tier", ["a"]),
        ("/api/v1/pods", "labelSelector=app+in+(db,cache)", ["b"]),
        ("/api/v1/pods", "fieldSelector=status.phase%3DRunning", ["a", "c"]),
        ("/api/v1/pods", "fieldSelector=metadata.namespace!%3Ddefault", ["c"]),
        ("/api/v1/namespaces/default/pods", "fieldSelector=metadata.name%3Db", ["b"]),
    ])
    def test_selectors(self, pods: Emulator, path: str, query: str,
                       want_names: list[str]) -> None:
        reply = call(pods.url, "GET", f"{path}?{query}")
        assert reply.data["kind"] == "PodList" and reply.data["apiVersion"] == "v1"
        assert [pod["metadata"]["name"] for pod in reply.data["items"]] == want_names
        assert all(pod["kind"] == "Pod" for pod in reply.data["items"])

    def test_the_client_reads_kind_and_selectors(self, pods: Emulator,
                                                 core: k8s.CoreV1Api) -> None:
        listed = core.list_pod_for_all_namespaces(label_selector="app=web",
                                                  field_selector="metadata.name=c")
        assert listed.kind == "PodList" and [p.metadata.name for p in listed.items] == ["c"]

    def test_pages(self, pods: Emulator) -> None:
        first = call(pods.url, "GET", "/api/v1/pods?limit=2").data
        assert [p["metadata"]["name"] for p in first["items"]] == ["a", "b"]
        assert first["metadata"]["remainingItemCount"] == 1
        token = first["metadata"]["continue"]
        second = call(pods.url, "GET", f"/api/v1/pods?limit=2&continue={token}").data
        assert [p["metadata"]["name"] for p in second["items"]] == ["c"]
        assert "continue" not in second["metadata"]

    def test_every_page_carries_the_first_pages_version(self, pods: Emulator) -> None:
        first = call(pods.url, "GET", "/api/v1/pods?limit=1").data
        version = first["metadata"]["resourceVersion"]
        pods.create({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "d", "namespace": "kube-system"}})
        token = first["metadata"]["continue"]
        second = call(pods.url, "GET", f"/api/v1/pods?limit=1&continue={token}").data
        assert second["metadata"]["resourceVersion"] == version

    def test_a_continue_token_past_the_retained_history_is_410_expired(self) -> None:
        with Emulator(history=3) as api:
            for name in ("a", "b", "c"):
                api.create(configmap(name, namespace="default"))
            first = call(api.url, "GET", f"{CM_PATH}?limit=2").data
            for name in ("d", "e", "f", "g"):  # the list's version leaves the history
                api.create(configmap(name, namespace="default"))
            token = first["metadata"]["continue"]
            reply = call(api.url, "GET", f"{CM_PATH}?limit=2&continue={token}")
            assert reply.status == 410 and reply.data["reason"] == "Expired"
            assert "start a new list without the continue parameter" in reply.data["message"]
            again = call(api.url, "GET", f"{CM_PATH}?limit=2").data
            assert [c["metadata"]["name"] for c in again["items"]] == ["a", "b"]

    def test_a_bad_selector_is_400(self, pods: Emulator) -> None:
        assert call(pods.url, "GET", "/api/v1/pods?labelSelector=a+in+(b").status == 400


class TestCustomResources:
    def test_unknown_fields_are_pruned_and_defaults_filled(self, widgets: Emulator) -> None:
        reply = call(widgets.url, "POST", WIDGETS,
                     widget("w", typo=1, extra={"anything": {"goes": 1}}))
        assert reply.status == 201
        spec = reply.data["spec"]
        assert "typo" not in spec and spec["extra"] == {"anything": {"goes": 1}}
        assert spec["color"] == "red"

    @pytest.mark.parametrize(("body", "want_message"), [
        ({"apiVersion": WIDGET_API, "kind": "Widget", "metadata": {"name": "w"}, "spec": {}},
         'Widget.emu.kuota.dev "w" is invalid: spec.size: Required value'),
        (widget("w", color="green"), "spec.color: Unsupported value"),
        (widget("w", size=-1), "spec.size"),
    ])
    def test_invalid_objects_are_422(self, widgets: Emulator, body: dict[str, Any],
                                     want_message: str) -> None:
        reply = call(widgets.url, "POST", WIDGETS, body)
        assert reply.status == 422 and want_message in reply.data["message"]

    def test_a_bad_crd_is_422_naming_the_field(self, k8s_api: Emulator) -> None:
        crd = widget_crd()
        crd["spec"]["scope"] = "Galaxy"
        reply = call(k8s_api.url, "POST",
                     "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        assert reply.status == 422 and "spec.scope" in reply.data["message"]

    def test_a_registered_crd_is_established(self, widgets: Emulator) -> None:
        crd = widgets.get("apiextensions.k8s.io/v1", "CustomResourceDefinition",
                          "widgets.emu.kuota.dev")
        conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert conditions == {"NamesAccepted": "True", "Established": "True"}


class TestFaults:
    def test_the_next_writes_fail_then_succeed(self, k8s_api: Emulator,
                                               core: k8s.CoreV1Api) -> None:
        core.create_namespaced_config_map("default", configmap("a"))
        fault = k8s_api.faults.fail(status=409, times=2, plural="configmaps", verbs={"patch"})
        outcomes = []
        for n in range(3):
            try:
                core.patch_namespaced_config_map("a", "default", {"data": {"n": str(n)}})
                outcomes.append(200)
            except k8s.ApiException as exc:
                outcomes.append(exc.status)
        assert outcomes == [409, 409, 200] and fault.hits == 2 and fault.remaining == 0
        assert core.read_namespaced_config_map("a", "default").data == {"k": "v", "n": "2"}

    @pytest.mark.parametrize(("options", "request_", "want_status"), [
        ({"status": 500}, ("POST", CM_PATH), 500),
        ({"status": 503, "verbs": {"list"}}, ("GET", CM_PATH), 503),
        ({"status": 500, "subresource": "status"}, ("POST", CM_PATH), 201),
        ({"status": 500, "namespace": "kube-system"}, ("POST", CM_PATH), 201),
        ({"status": 500, "plural": "secrets"}, ("POST", CM_PATH), 201),
    ])
    def test_faults_match_what_they_name(self, k8s_api: Emulator, options: dict[str, Any],
                                         request_: tuple[str, str], want_status: int) -> None:
        k8s_api.faults.fail(**options)
        method, path = request_
        reply = call(k8s_api.url, method, path, configmap("a") if method == "POST" else None)
        assert reply.status == want_status
        created = k8s_api.find("v1", "ConfigMap", "a", "default") is not None
        assert created is (want_status == 201)  # a failed write leaves nothing behind


class TestMethods:
    @pytest.mark.parametrize(("method", "path", "want_status"), [
        ("PATCH", CM_PATH, 405),
        ("PUT", CM_PATH, 405),
        ("POST", f"{CM_PATH}/a", 405),
        ("GET", "/api/v1/namespaces/default/nothings", 404),
        ("GET", "/apis/nowhere.dev/v1", 404),
        ("POST", "/api", 405),
    ])
    def test_wrong_methods_and_paths(self, k8s_api: Emulator, method: str, path: str,
                                     want_status: int) -> None:
        reply = call(k8s_api.url, method, path, configmap("a") if method != "GET" else None,
                     content_type=MERGE_PATCH if method == "PATCH" else "application/json")
        assert reply.status == want_status and reply.data["kind"] == "Status"
