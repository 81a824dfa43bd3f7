"""A minimal kopf operator against the emulator: finalizers, status patches, peering.

kopf reaches the emulator through a ``@kopf.on.login`` handler returning
``kopf.ConnectionInfo(server=URL)`` and runs in a thread via
``kopf.testing.KopfRunner``. Handlers live in a private registry per test.
"""

from __future__ import annotations

import logging
from typing import Any

import kmock
import kopf
import pytest
from kopf.testing import KopfRunner

from tests.emulator import JSON_PATCH, Emulator
from tests.emulator.samples import WIDGET_API, kopf_peering_crds, widget, widget_crd

WIDGETS = kmock.resource("emu.kuota.dev", "v1", "widgets")
FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"


def operator(api: Emulator, deleted: list[str]) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(server=api.url)

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.level = logging.WARNING  # fewer Event objects to post
        settings.watching.reconnect_backoff = 0.1

    @kopf.on.create("emu.kuota.dev", "v1", "widgets", registry=registry)
    def created(spec: kopf.Spec, patch: kopf.Patch, **_: Any) -> None:
        patch.status["phase"] = "Seen"
        patch.status["ready"] = spec["size"] > 0

    @kopf.on.delete("emu.kuota.dev", "v1", "widgets", registry=registry)
    def gone(name: str, **_: Any) -> None:
        deleted.append(name)

    return registry


def status_of(api: Emulator, name: str) -> dict[str, Any]:
    obj = api.find(WIDGET_API, "Widget", name, "default")
    return (obj or {}).get("status") or {}


@pytest.fixture
def widgets(k8s_api: Emulator) -> Emulator:
    k8s_api.create(widget_crd())
    return k8s_api


class TestOperator:
    def test_finalizer_status_and_deletion(self, widgets: Emulator) -> None:
        deleted: list[str] = []
        args = ["run", "-A", "--standalone"]
        with KopfRunner(args, registry=operator(widgets, deleted), timeout=30) as runner:
            widgets.create(widget("w1", size=2))
            widgets.wait_for(lambda: status_of(widgets, "w1").get("phase") == "Seen")
            obj = widgets.get(WIDGET_API, "Widget", "w1", "default")
            assert obj["metadata"]["finalizers"] == [FINALIZER]
            assert obj["status"] == {"phase": "Seen", "ready": True}

            widgets.delete(WIDGET_API, "Widget", "w1", "default")
            widgets.wait_for(lambda: widgets.find(WIDGET_API, "Widget", "w1", "default") is None)
        assert runner.exit_code == 0, runner.output
        assert deleted == ["w1"]
        finalizer_patches = [r.data for r in widgets.handler["patch", WIDGETS]
                             if r.headers.get("Content-Type") == JSON_PATCH]
        assert finalizer_patches[0][0]["op"] == "test"
        assert finalizer_patches[0][0]["path"] == "/metadata/resourceVersion"

    def test_a_concurrent_write_fails_the_finalizer_test_and_kopf_recovers(
            self, widgets: Emulator) -> None:
        def write_in_between(request: kmock.Request) -> None:  # runs before the patch lands
            widgets.patch(WIDGET_API, "Widget", "w1", {"metadata": {"labels": {"x": "y"}}},
                          namespace="default")

        widgets.handler["patch", WIDGETS, {"Content-Type": JSON_PATCH}] >> write_in_between
        with KopfRunner(["run", "-A", "--standalone"], registry=operator(widgets, []),
                        timeout=30) as runner:
            widgets.create(widget("w1"))
            widgets.wait_for(lambda: status_of(widgets, "w1").get("phase") == "Seen")
        assert runner.exit_code == 0, runner.output
        finalizer_patches = [r for r in widgets.handler["patch", WIDGETS]
                             if r.headers.get("Content-Type") == JSON_PATCH]
        assert [widgets.status_of(r) for r in finalizer_patches] == [422, 200]
        obj = widgets.get(WIDGET_API, "Widget", "w1", "default")
        assert obj["metadata"]["labels"] == {"x": "y"}  # the concurrent write survived
        assert obj["metadata"]["finalizers"] == [FINALIZER]


class TestPeering:
    def test_kopf_announces_itself_in_the_peering_object(self, widgets: Emulator) -> None:
        for crd in kopf_peering_crds():
            widgets.create(crd)
        widgets.create({"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering",
                        "metadata": {"name": "default"}})

        def peers() -> dict[str, Any]:
            peering = widgets.get("kopf.dev/v1", "ClusterKopfPeering", "default")
            return peering.get("status") or {}

        with KopfRunner(["run", "-A", "--peering=default"], registry=operator(widgets, []),
                        timeout=30) as runner:
            announced = widgets.wait_for(peers, what="a peer in the peering object")
            widgets.create(widget("w1"))
            widgets.wait_for(lambda: status_of(widgets, "w1").get("phase") == "Seen")
        assert runner.exit_code == 0, runner.output
        (peer,) = announced.values()
        assert peer["priority"] == 0 and peer["lifetime"] > 0
        assert peers() == {}  # kopf removes itself when it stops
