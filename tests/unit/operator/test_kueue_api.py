"""Serving Kueue's own group: the conversion webhook, the CRDs, the refusal beside Kueue."""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from kuota import cli, crds, kueuecrds
from kuota.operator import conversion, kueue_api, names
from quota import api
from quota.api.kueue import KUEUE_V1BETA1, KUEUE_V1BETA2, to_kueue

ROOT = pathlib.Path(__file__).resolve().parents[3]
V1 = "kueue.x-k8s.io/v1beta1"
V2 = "kueue.x-k8s.io/v1beta2"


def _review(desired: str, *objects: Any) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "u-1", "desiredAPIVersion": desired, "objects": list(objects)}}


CQ_V1 = {"apiVersion": V1, "kind": "ClusterQueue", "metadata": {"name": "cq"},
         "spec": {"cohort": "all", "admissionChecks": ["prov"],
                  "flavorFungibility": {"whenCanBorrow": "Borrow"}}}
WL_V2 = {"apiVersion": V2, "kind": "Workload", "metadata": {"name": "w", "namespace": "ns"},
         "spec": {"queueName": "q", "priorityClassRef": {
             "group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "high"}},
         "status": {"accumulatedPastExecutionTimeSeconds": 7}}


class TestConversionReview:
    @pytest.mark.parametrize(("desired", "obj", "want_at", "want"), [
        (V2, CQ_V1, ("spec",), {"cohortName": "all", "flavorFungibility": {
            "whenCanBorrow": "MayStopSearch"},
            "admissionChecksStrategy": {"admissionChecks": [{"name": "prov"}]}}),
        (V1, WL_V2, ("spec",), {"queueName": "q", "priorityClassName": "high",
                                "priorityClassSource": "scheduling.k8s.io/priorityclass"}),
        (V1, WL_V2, ("status",), {"accumulatedPastExexcutionTimeSeconds": 7}),
        (V1, {"apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": "l"},
              "status": {"flavorsUsage": [{"name": "rf"}]}},
         ("status",), {"flavorUsage": [{"name": "rf"}]}),
    ], ids=["cq-v1beta1-up", "wl-priority-down", "wl-status-down", "lq-status-down"])
    def test_objects_come_back_in_the_desired_version(
            self, desired: str, obj: dict[str, Any], want_at: tuple[str, ...],
            want: dict[str, Any]) -> None:
        answer = conversion.review(_review(desired, obj))
        response = answer["response"]
        assert response["uid"] == "u-1"
        assert response["result"] == {"status": "Success"}
        [out] = response["convertedObjects"]
        assert out["apiVersion"] == desired
        assert out["metadata"] == obj["metadata"], "conversion must not touch metadata"
        node = out
        for key in want_at:
            node = node[key]
        assert node == want

    def test_a_round_trip_gives_back_the_stored_object(self) -> None:
        down = conversion.review(_review(V1, WL_V2))["response"]["convertedObjects"]
        up = conversion.review(_review(V2, *down))["response"]["convertedObjects"]
        assert up == [WL_V2]

    @pytest.mark.parametrize(("review", "want"), [
        (_review("kuota.dev/v1alpha1", CQ_V1), "desiredAPIVersion 'kuota.dev/v1alpha1'"),
        (_review(V2, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}),
         "Pod p: apiVersion 'v1' is not Kueue's"),
        (_review(V2, "not an object"), "objects: expected an object, got str"),
        (_review(V2, {**CQ_V1, "spec": {"cohort": "a", "cohortName": "b"}}),
         "ClusterQueue cq: spec.cohort: conflicts with spec.cohortName"),
        ({"kind": "ConversionReview"}, "request: missing"),
    ], ids=["not-kueue-target", "not-kueue-object", "not-an-object", "conflict", "no-request"])
    def test_what_cannot_be_converted_fails_naming_object_and_field(
            self, review: dict[str, Any], want: str) -> None:
        result = conversion.review(review)["response"]["result"]
        assert result["status"] == "Failure"
        assert want in result["message"]

    def test_the_webhook_server_answers_reviews_and_passes_admissions_on(self) -> None:
        asyncio.run(self._serve_both())

    @staticmethod
    async def _serve_both() -> None:
        seen: list[Any] = []

        async def admission(data: Any, **_: Any) -> Any:
            seen.append(data)
            return {"response": {"allowed": True}}

        serve = conversion.answering_conversions(admission)
        answer = await serve(_review(V2, CQ_V1), webhook="convert")
        assert answer["response"]["convertedObjects"][0]["spec"]["cohortName"] == "all"
        assert seen == []
        review = {"kind": "AdmissionReview", "request": {"uid": "a"}}
        assert await serve(review, webhook="suspend-jobs") == {"response": {"allowed": True}}
        assert seen == [review]


class TestToKueue:
    @pytest.mark.parametrize("path", sorted((ROOT / "manifests" / "samples").glob("*.yaml")),
                             ids=lambda p: p.name)
    def test_kuota_samples_survive_both_kueue_versions(self, path: pathlib.Path) -> None:
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or not doc.get("apiVersion", "").startswith("kuota.dev"):
                continue
            want = api.parse_object(doc, source=str(path))
            for version in (KUEUE_V1BETA2, KUEUE_V1BETA1):
                out, problems = to_kueue(doc, version)
                assert problems == []
                assert out["apiVersion"] == version
                assert api.parse_object(out, source=str(path)) == want

    def test_a_workload_priority_class_names_kueues_group(self) -> None:
        doc = {"apiVersion": "kuota.dev/v1alpha1", "kind": "Workload",
               "metadata": {"name": "w"}, "spec": {"priorityClassRef": {
                   "group": "kuota.dev", "kind": "WorkloadPriorityClass", "name": "hi"}}}
        out, _ = to_kueue(doc)
        assert out["spec"]["priorityClassRef"]["group"] == "kueue.x-k8s.io"
        assert doc["spec"]["priorityClassRef"]["group"] == "kuota.dev", "input unchanged"


class TestRefusalBesideKueue:
    NOW = 1_800_000_000.0

    @staticmethod
    def lease(name: str = kueue_api.KUEUE_LEASE, *, age: float, holder: str = "kueue-1",
              duration: int = 15) -> dict[str, Any]:
        renewed = datetime.fromtimestamp(TestRefusalBesideKueue.NOW - age, UTC)
        return {"metadata": {"name": name, "namespace": "kueue-system"},
                "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration,
                         "renewTime": renewed.isoformat().replace("+00:00", "Z")}}

    @pytest.mark.parametrize(("leases", "want_running"), [
        ([], False),
        (["fresh"], True),
        (["stale"], False),
        (["unheld"], False),
        (["other-name"], False),
    ])
    def test_a_fresh_kueue_leader_lease_means_kueue_runs(
            self, leases: list[str], want_running: bool) -> None:
        made = {"fresh": self.lease(age=3), "stale": self.lease(age=600),
                "unheld": self.lease(age=3, holder=""),
                "other-name": self.lease("kuota-operator", age=1)}
        problem = kueue_api.kueue_running([made[k] for k in leases], self.NOW)
        assert (problem is not None) is want_running
        if problem:
            assert "kueue-system/c1f6bfd2.kueue.x-k8s.io" in problem

    def test_kueues_own_crds_are_told_from_kuotas(self) -> None:
        ours = kueuecrds.crd(api.KINDS["ClusterQueue"])
        theirs = {"metadata": {"name": "workloads.kueue.x-k8s.io"},
                  "spec": {"group": "kueue.x-k8s.io"}}
        other = {"metadata": {"name": "jobsets.jobset.x-k8s.io"},
                 "spec": {"group": "jobset.x-k8s.io"}}
        assert kueue_api.foreign_crds([ours, other]) is None
        problem = kueue_api.foreign_crds([ours, theirs, other])
        assert problem is not None and "workloads.kueue.x-k8s.io" in problem


class TestKueueCrds:
    def test_checked_in_kueue_crds_match_the_models(self) -> None:
        assert crds.drift(ROOT / "manifests" / "kueue", kueuecrds.rendered(),
                          group=kueuecrds.GROUP) == []

    @pytest.mark.parametrize("kind", kueuecrds.SERVED_KINDS)
    def test_each_is_structural_in_both_versions_stores_v1beta2_and_converts(
            self, kind: str) -> None:
        crd = kueuecrds.crd(api.KINDS[kind])
        versions = {v["name"]: v for v in crd["spec"]["versions"]}
        assert set(versions) == {"v1beta1", "v1beta2"}
        assert versions["v1beta2"]["storage"] and not versions["v1beta1"]["storage"]
        for version in versions.values():
            assert crds.structural_problems(version["schema"]["openAPIV3Schema"]) == []
        assert crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["path"] == \
            "/convert"
        assert crd["metadata"]["labels"] == {"app.kubernetes.io/part-of": "kuota"}

    @pytest.mark.parametrize(("kind", "want_v1beta1", "want_v1beta2"), [
        ("ClusterQueue", {"cohort", "admissionChecks"}, {"cohortName"}),
        ("Workload", {"priorityClassName", "priorityClassSource"}, {"priorityClassRef"}),
    ])
    def test_v1beta1_has_kueues_older_spec_names(
            self, kind: str, want_v1beta1: set[str], want_v1beta2: set[str]) -> None:
        versions = {v["name"]: v["schema"]["openAPIV3Schema"]["properties"]["spec"]
                    ["properties"] for v in kueuecrds.crd(api.KINDS[kind])["spec"]["versions"]}
        assert want_v1beta1 <= set(versions["v1beta1"]) and \
            not want_v1beta2 & set(versions["v1beta1"])
        assert want_v1beta2 <= set(versions["v1beta2"])

    def test_kueues_short_names(self) -> None:
        names_of = {kind: kueuecrds.crd(api.KINDS[kind])["spec"]["names"].get("shortNames")
                    for kind in ("LocalQueue", "ResourceFlavor", "Workload")}
        assert names_of == {"LocalQueue": ["queue", "queues", "lq"],
                            "ResourceFlavor": ["flavor", "flavors", "rf"],
                            "Workload": ["wl"]}

    def test_the_command_writes_and_checks_them(self, tmp_path: pathlib.Path) -> None:
        assert cli.main(["crds", "--kueue", "--write", str(tmp_path)]) == 0
        assert cli.main(["crds", "--kueue", "--check", str(tmp_path)]) == 0
        (tmp_path / "cohorts.kueue.x-k8s.io.yaml").write_text("changed")
        assert cli.main(["crds", "--kueue", "--check", str(tmp_path)]) == 1


@pytest.fixture
def served_kueue() -> Iterator[None]:
    names.serve("kueue")
    yield
    names.serve("kuota")


def test_serving_kueue_moves_every_queue_object_and_workload(served_kueue: None) -> None:
    queue_objects = (names.RESOURCE_FLAVORS, names.COHORTS, names.CLUSTER_QUEUES,
                     names.LOCAL_QUEUES, names.ADMISSION_CHECKS, names.TOPOLOGIES,
                     names.PRIORITY_CLASSES, names.WORKLOADS)
    assert {r.api_version for r in queue_objects} == {"kueue.x-k8s.io/v1beta2"}
    assert names.KOPF_WATCHED["ClusterQueue"] == names.CLUSTER_QUEUES
    assert names.INFORMED[0] == (names.WORKLOADS, None)
    # Member clusters are kuota's own kinds either way.
    assert names.KOPF_WATCHED["MemberCluster"].group == "kuota.dev"
