"""Discovery, server-side tables, and kmock's own features on the emulator."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import kmock
import pytest

from tests.emulator import Emulator
from tests.emulator.clients import call
from tests.emulator.samples import widget, widget_crd

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def resources(api: Emulator, path: str) -> dict[str, dict[str, Any]]:
    reply = call(api.url, "GET", path)
    assert reply.status == 200, reply.data
    return {entry["name"]: entry for entry in reply.data["resources"]}


class TestDiscovery:
    def test_core_v1_lists_built_ins_and_subresources(self, k8s_api: Emulator) -> None:
        core = resources(k8s_api, "/api/v1")
        assert {"pods", "pods/status", "namespaces", "events", "secrets", "configmaps",
                "nodes"} <= set(core)
        assert core["pods"]["namespaced"] is True and core["nodes"]["namespaced"] is False
        assert core["pods"]["kind"] == "Pod" and core["pods"]["shortNames"] == ["po"]
        assert call(k8s_api.url, "GET", "/api").data["versions"] == ["v1"]

    @pytest.mark.parametrize(("group_version", "plural", "want_kind"), [
        ("batch/v1", "jobs", "Job"),
        ("coordination.k8s.io/v1", "leases", "Lease"),
        ("apiextensions.k8s.io/v1", "customresourcedefinitions", "CustomResourceDefinition"),
        ("scheduling.k8s.io/v1", "priorityclasses", "PriorityClass"),
    ])
    def test_built_in_groups(self, k8s_api: Emulator, group_version: str, plural: str,
                             want_kind: str) -> None:
        assert resources(k8s_api, f"/apis/{group_version}")[plural]["kind"] == want_kind
        groups = call(k8s_api.url, "GET", "/apis").data["groups"]
        assert group_version in [v["groupVersion"] for g in groups for v in g["versions"]]

    def test_a_registered_crd_appears_and_goes(self, k8s_api: Emulator) -> None:
        assert call(k8s_api.url, "GET", "/apis/emu.kuota.dev/v1").status == 404
        assert call(k8s_api.url, "POST", CRDS, widget_crd()).status == 201
        served = resources(k8s_api, "/apis/emu.kuota.dev/v1")
        assert served["widgets"]["shortNames"] == ["wdg"]
        assert served["widgets"]["categories"] == ["kuota-test"]
        assert served["widgets"]["singularName"] == "widget"
        assert "widgets/status" in served
        group = call(k8s_api.url, "GET", "/apis/emu.kuota.dev").data
        assert group["preferredVersion"]["groupVersion"] == "emu.kuota.dev/v1"
        assert call(k8s_api.url, "POST", "/apis/emu.kuota.dev/v1/namespaces/default/widgets",
                    widget("w")).status == 201

        assert call(k8s_api.url, "DELETE", f"{CRDS}/widgets.emu.kuota.dev").status == 200
        assert call(k8s_api.url, "GET", "/apis/emu.kuota.dev/v1").status == 404
        assert "emu.kuota.dev" not in [g["name"] for g in
                                       call(k8s_api.url, "GET", "/apis").data["groups"]]
        call(k8s_api.url, "POST", CRDS, widget_crd())  # the objects went with the CRD
        listed = call(k8s_api.url, "GET", "/apis/emu.kuota.dev/v1/widgets").data
        assert listed["items"] == []

    def test_every_served_version_shares_the_objects(self, k8s_api: Emulator) -> None:
        crd = widget_crd()
        crd["spec"]["versions"].append(dict(crd["spec"]["versions"][0], name="v2",
                                            storage=False))
        k8s_api.create(crd)
        k8s_api.create(widget("w"))
        reply = call(k8s_api.url, "GET", "/apis/emu.kuota.dev/v2/namespaces/default/widgets/w")
        assert reply.status == 200 and reply.data["apiVersion"] == "emu.kuota.dev/v2"

    def test_version_and_health(self, k8s_api: Emulator) -> None:
        assert call(k8s_api.url, "GET", "/version").data["major"] == "1"
        assert call(k8s_api.url, "GET", "/openapi/v3").status == 404


class TestTables:
    @pytest.fixture
    def now(self) -> list[datetime.datetime]:
        return [datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)]

    @pytest.fixture
    def api(self, now: list[datetime.datetime]) -> Iterator[Emulator]:
        with Emulator(clock=lambda: now[0]) as api:  # an injected clock makes ages exact
            api.create(widget_crd())
            yield api

    def test_crd_printer_columns(self, api: Emulator, now: list[datetime.datetime]) -> None:
        api.create(dict(widget("w", size=4), status={
            "phase": "Up", "conditions": [{"type": "Ready", "status": "True"}]}))
        now[0] += datetime.timedelta(seconds=150)
        reply = call(api.url, "GET", "/apis/emu.kuota.dev/v1/namespaces/default/widgets",
                     headers={"Accept": TABLE})
        table = reply.data
        assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
        assert [c["name"] for c in table["columnDefinitions"]] == \
            ["Name", "Size", "Color", "Phase", "Ready", "Age"]
        assert table["columnDefinitions"][0]["format"] == "name"
        assert table["rows"][0]["cells"] == ["w", 4, "red", "Up", "True", "2m30s"]
        assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
        assert table["metadata"]["resourceVersion"]

    @pytest.mark.parametrize(("include", "want_kind"), [
        ("Object", "Widget"), ("Metadata", "PartialObjectMetadata"), ("None", None),
    ])
    def test_include_object(self, api: Emulator, include: str, want_kind: str | None) -> None:
        api.create(widget("w"))
        reply = call(api.url, "GET", "/apis/emu.kuota.dev/v1/namespaces/default/widgets/w"
                     f"?includeObject={include}", headers={"Accept": TABLE})
        row = reply.data["rows"][0]
        assert row.get("object", {}).get("kind") == want_kind

    def test_a_crd_without_columns_shows_age(self, k8s_api: Emulator) -> None:
        k8s_api.create(widget_crd(columns=False))
        k8s_api.create(widget("w"))
        table = call(k8s_api.url, "GET", "/apis/emu.kuota.dev/v1/widgets",
                     headers={"Accept": TABLE}).data
        assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]

    def test_plain_json_without_the_table_accept(self, api: Emulator) -> None:
        reply = call(api.url, "GET", "/apis/emu.kuota.dev/v1/widgets")
        assert reply.data["kind"] == "WidgetList"


class TestKmockFeatures:
    def test_requests_are_recorded_for_assertions(self, k8s_api: Emulator) -> None:
        call(k8s_api.url, "POST", "/api/v1/namespaces/default/configmaps",
             {"metadata": {"name": "a"}})
        call(k8s_api.url, "GET", "/api/v1/namespaces/default/configmaps/a")
        creates = k8s_api.handler["post", kmock.resource("", "v1", "configmaps")]
        assert len(creates) == 1 and creates[0].data == {"metadata": {"name": "a"}}
        assert creates[0].namespace == "default"
        fetches = k8s_api.handler[kmock.action.FETCH]
        assert [r.name for r in fetches] == ["a"]

    def test_dsl_reactions_override_the_emulation(self, k8s_api: Emulator) -> None:
        k8s_api.handler["get /version"] << {"major": "9", "minor": "99"}
        assert call(k8s_api.url, "GET", "/version").data == {"major": "9", "minor": "99"}
        assert call(k8s_api.url, "GET", "/api").data["versions"] == ["v1"]  # others unchanged
