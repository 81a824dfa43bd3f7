"""Updates of pods and Jobs change only what the real validation lets them change."""

from __future__ import annotations

from typing import Any

import pytest

from tests.emulator import Emulator
from tests.emulator.clients import call

PODS = "/api/v1/namespaces/default/pods"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
MERGE = "application/merge-patch+json"
GATE = {"name": "example.com/gate"}
Body = dict[str, Any]


def pod(*, gated: bool = True, selector: dict[str, str] | None = None,
        affinity: Body | None = None) -> Body:
    spec: Body = {"containers": [{"name": "c", "image": "i:1"}],
                  "tolerations": [{"key": "t", "operator": "Exists"}]}
    if gated:
        spec["schedulingGates"] = [GATE, {"name": "example.com/other"}]
    if selector:
        spec["nodeSelector"] = selector
    if affinity:
        spec["affinity"] = affinity
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def required(*expressions: Body) -> Body:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": list(expressions)}]}}}


ZONE_A = {"key": "zone", "operator": "In", "values": ["a"]}
RACK_1 = {"key": "rack", "operator": "In", "values": ["r1"]}


class TestPodUpdates:
    @pytest.mark.parametrize(("gated", "selector", "patch", "want_status", "want_message"), [
        (True, {"zone": "a"}, {"nodeSelector": {"rack": "r1"}}, 200, None),
        (True, {"zone": "a"}, {"nodeSelector": {"zone": "b"}}, 422,
         "only additions to spec.nodeSelector"),
        (True, {"zone": "a"}, {"nodeSelector": {"zone": None}}, 422,
         "only additions to spec.nodeSelector"),
        # gate removed and a key added in one write: the stored pod was gated
        (True, None, {"schedulingGates": [{"name": "example.com/other"}],
                      "nodeSelector": {"zone": "a"}}, 200, None),
        (False, None, {"nodeSelector": {"zone": "a"}}, 422, "may not change fields"),
        (True, None, {"schedulingGates": [GATE, {"name": "example.com/other"},
                                          {"name": "new"}]}, 422, "only deletion is allowed"),
        (False, None, {"tolerations": [{"key": "t", "operator": "Exists"},
                                       {"key": "u", "operator": "Exists"}]}, 200, None),
        (False, None, {"tolerations": [{"key": "u", "operator": "Exists"}]}, 422,
         "existing toleration"),
        (False, None, {"containers": [{"name": "c", "image": "i:2"}]}, 200, None),
        (False, None, {"containers": [{"name": "c", "image": "i:1", "args": ["x"]}]}, 422,
         "may not change fields"),
        (False, None, {"activeDeadlineSeconds": 60}, 200, None),
        (True, None, {"hostname": "h"}, 422, "may not change fields"),
    ])
    def test_spec_changes(self, k8s_api: Emulator, gated: bool,
                          selector: dict[str, str] | None, patch: Body, want_status: int,
                          want_message: str | None) -> None:
        k8s_api.create(dict(pod(gated=gated, selector=selector),
                            metadata={"name": "p", "namespace": "default"}))
        reply = call(k8s_api.url, "PATCH", f"{PODS}/p", {"spec": patch}, content_type=MERGE)
        assert reply.status == want_status, reply.data
        if want_message:
            assert want_message in reply.data["message"]

    @pytest.mark.parametrize(("before", "after", "want_status"), [
        (None, required(ZONE_A), 200),  # nothing required before: anything goes
        (required(ZONE_A), required(ZONE_A, RACK_1), 200),  # a requirement added
        (required(ZONE_A), required(RACK_1), 422),  # one replaced
        (required(ZONE_A), None, 422),  # removed
    ])
    def test_a_gated_pods_node_affinity_only_grows(self, k8s_api: Emulator, before: Body | None,
                                                   after: Body | None, want_status: int) -> None:
        k8s_api.create(dict(pod(affinity=before), metadata={"name": "p", "namespace": "default"}))
        reply = call(k8s_api.url, "PATCH", f"{PODS}/p", {"spec": {"affinity": after}},
                     content_type=MERGE)
        assert reply.status == want_status, reply.data


def job(*, suspend: bool = True) -> Body:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "default"},
            "spec": {"suspend": suspend, "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "c", "image": "i:1"}],
                         "nodeSelector": {"zone": "a"}}}}}


STARTED = {"startTime": "2026-01-01T00:00:00Z", "active": 1}


class TestJobUpdates:
    @pytest.mark.parametrize(("suspend", "status", "template", "want_status"), [
        (True, None, {"spec": {"nodeSelector": {"zone": "b"}}}, 200),
        (True, None, {"spec": {"tolerations": [{"key": "t", "operator": "Exists"}]}}, 200),
        (True, None, {"metadata": {"labels": {"kuota": "x"}}}, 200),
        (True, None, {"spec": {"affinity": required(ZONE_A)}}, 200),
        (True, None, {"spec": {"containers": [{"name": "c", "image": "i:2"}]}}, 422),
        (False, None, {"spec": {"nodeSelector": {"zone": "b"}}}, 422),
        (True, STARTED, {"spec": {"nodeSelector": {"zone": "b"}}}, 422),  # ran once
    ])
    def test_the_template_changes_only_while_suspended_and_not_started(
            self, k8s_api: Emulator, suspend: bool, status: Body | None, template: Body,
            want_status: int) -> None:
        k8s_api.create(job(suspend=suspend))
        if status:
            k8s_api.patch("batch/v1", "Job", "j", {"status": status}, namespace="default",
                          subresource="status")
        reply = call(k8s_api.url, "PATCH", f"{JOBS}/j", {"spec": {"template": template}},
                     content_type=MERGE)
        assert reply.status == want_status, reply.data
        if want_status == 422:
            assert "spec.template" in reply.data["message"]

    @pytest.mark.parametrize(("suspend", "want_status"), [(True, 200), (False, 422)])
    def test_start_time_is_cleared_through_status_only_while_suspended(
            self, k8s_api: Emulator, suspend: bool, want_status: int) -> None:
        k8s_api.create(job(suspend=suspend))
        k8s_api.patch("batch/v1", "Job", "j", {"status": STARTED}, namespace="default",
                      subresource="status")
        reply = call(k8s_api.url, "PATCH", f"{JOBS}/j/status",
                     {"status": {"startTime": None}}, content_type=MERGE)
        assert reply.status == want_status, reply.data

    def test_a_job_that_ran_is_restored_after_its_start_time_is_cleared(
            self, k8s_api: Emulator) -> None:
        k8s_api.create(job(suspend=False))
        k8s_api.patch("batch/v1", "Job", "j", {"status": STARTED}, namespace="default",
                      subresource="status")
        k8s_api.patch("batch/v1", "Job", "j", {"spec": {"suspend": True}}, namespace="default")
        restore = {"spec": {"template": {"spec": {"nodeSelector": {"zone": "b"}}}}}
        assert call(k8s_api.url, "PATCH", f"{JOBS}/j", restore, content_type=MERGE).status \
            == 422
        call(k8s_api.url, "PATCH", f"{JOBS}/j/status", {"status": {"startTime": None}},
             content_type=MERGE)
        assert call(k8s_api.url, "PATCH", f"{JOBS}/j", restore, content_type=MERGE).status \
            == 200

    def test_completion_mode_is_immutable(self, k8s_api: Emulator) -> None:
        k8s_api.create(job())
        reply = call(k8s_api.url, "PATCH", f"{JOBS}/j", {"spec": {"completionMode": "Indexed"}},
                     content_type=MERGE)
        assert reply.status == 422 and "completionMode" in reply.data["message"]
