"""A rebuild checks each manifest shape once: the cached answer equals a full check."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kuota.service import submission
from kuota.service.rebuild import SpecCache, checked_info, workload_object
from queueing.store import WorkloadRecord, digests
from quota import api
from quota.lifecycle import State
from quota.workload import WorkloadInfo


def manifest(name: str, cpu: int = 1, label: str = "a") -> dict[str, Any]:
    doc = submission.from_args(["train"], queue="team/lq", name=name, requests={"cpu": cpu})
    doc["metadata"]["labels"] = {"app": label}
    return doc


def in_namespace(doc: dict[str, Any], namespace: str | None) -> dict[str, Any]:
    if namespace is None:
        del doc["metadata"]["namespace"]
    else:
        doc["metadata"]["namespace"] = namespace
    return doc


def check(doc: dict[str, Any]) -> api.Workload | str:
    try:
        return submission.parse_workload(doc, source="s")
    except api.ObjectError as exc:
        return str(exc)


@pytest.mark.parametrize("docs", [
    pytest.param([manifest("w-1"), manifest("w-2"), manifest("w-3")], id="same shape"),
    pytest.param([manifest("w-1"), manifest("Bad_Name"), manifest("w-3")],
                 id="an invalid name after a cached shape"),
    pytest.param([manifest("w-1"), manifest("w-2", cpu=2), manifest("w-3", label="b")],
                 id="spec and labels are part of the shape"),
    pytest.param([manifest("w-1", cpu=0), manifest("w-2", cpu=0)], id="a shape refused twice"),
    pytest.param([manifest("w-1"), in_namespace(manifest("w-2"), "other"),
                  in_namespace(manifest("w-3"), "Bad_NS"), in_namespace(manifest("w-4"), ""),
                  in_namespace(manifest("w-5"), None)],
                 id="the namespace is not part of the shape but still checked"),
])
@pytest.mark.parametrize("limit", [None, 1])
def test_the_cache_answers_as_a_full_check(docs: list[dict[str, Any]],
                                           limit: int | None) -> None:
    cache = SpecCache(limit)
    for doc in docs:
        want = check(doc)
        try:
            got: api.Workload | str = cache.parse(doc, "s")
        except api.ObjectError as exc:
            got = str(exc)
        assert got == want
        if isinstance(got, api.Workload):
            assert got.metadata.name == doc["metadata"]["name"]


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the manifests the rebuild parses and checks in full, in order."""
    names: list[str] = []
    real = submission.parse_workload

    def counting(doc: dict[str, Any], source: str) -> api.Workload:
        names.append(doc["metadata"]["name"])
        return real(doc, source=source)

    monkeypatch.setattr("kuota.service.rebuild.parse_workload", counting)
    return names


def test_a_leaders_cache_keeps_only_the_shapes_it_met_last(checks: list[str]) -> None:
    cache = SpecCache(limit=2)
    for doc in (manifest("a-1", 1), manifest("b-1", 2), manifest("a-2", 1),
                manifest("c-1", 3), manifest("a-3", 1), manifest("b-2", 2)):
        cache.parse(doc, "s")
    # a's shape was used last when c came in, so b's was dropped and is checked again.
    assert checks == ["a-1", "b-1", "c-1", "b-2"]


def test_what_a_pool_cannot_run_is_refused_for_every_workload_of_the_shape() -> None:
    cache = SpecCache()
    for name in ("w-1", "w-2"):
        doc = manifest(name)
        doc["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["command"] = ["a\0b"]
        record = WorkloadRecord(f"team/{name}", State.PENDING, spec_json=json.dumps(doc))
        with pytest.raises(api.ObjectError, match=f"workload team/{name}: .*NUL byte"):
            workload_object(record, cache)


def stored(name: str, doc: dict[str, Any], *, priority: int = 0,
           text: str | None = None) -> WorkloadRecord:
    """A record as a submission stores it: the manifest's text and its digests."""
    canonical = digests.canonical(doc)
    return WorkloadRecord(f"team/{name}", State.PENDING, spec_json=canonical if text is None
                          else text, priority=priority, queued_at=float(len(name)),
                          shape=digests.shape(doc), spec_sum=digests.digest(canonical))


def full_check(record: WorkloadRecord) -> WorkloadInfo | str:
    return checked_info(record)  # no cache: every manifest parsed and checked


@pytest.mark.parametrize("records", [
    pytest.param([stored("w-1", manifest("w-1")), stored("w-2", manifest("w-2"), priority=5)],
                 id="shape mates"),
    pytest.param([stored("w-1", manifest("w-1")), stored("Bad_Name", manifest("Bad_Name"))],
                 id="a mate with an invalid name"),
    pytest.param([stored("w-1", manifest("w-1")),
                  stored("w-2", manifest("w-2"), text=json.dumps(manifest("w-2", cpu=0)))],
                 id="a mate whose text was rewritten around kuota"),
    pytest.param([stored("w-1", manifest("w-1")),
                  stored("w-2", manifest("w-2"), text="{not json")],
                 id="a mate whose text is no longer JSON"),
])
def test_a_record_of_a_known_shape_reads_as_a_full_check(records: list[WorkloadRecord]
                                                         ) -> None:
    cache = SpecCache()
    for record in records:
        got, want = checked_info(record, cache), full_check(record)
        if isinstance(want, str):
            assert got == want
            continue
        assert isinstance(got, WorkloadInfo)
        assert (got.key, got.queue_name, got.pod_sets, got.priority, got.created,
                got.priority_class, got.equivalence) == (
            want.key, want.queue_name, want.pod_sets, want.priority, want.created,
            want.priority_class, want.equivalence)


def test_shape_mates_are_parsed_once(checks: list[str]) -> None:
    cache = SpecCache()
    infos = [checked_info(stored(f"w-{i}", manifest(f"w-{i}")), cache) for i in range(5)]
    assert checks == ["w-0"]
    assert [i.key for i in infos if isinstance(i, WorkloadInfo)] == [
        f"team/w-{i}" for i in range(5)]
