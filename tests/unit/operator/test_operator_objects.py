"""The object cache: newest resourceVersion wins, deletions leave tombstones."""

from __future__ import annotations

from typing import Any

import pytest

from kuota.operator.objects import Objects, newer


def obj(name: str, rv: str, namespace: str | None = "ns") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "resourceVersion": rv}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta}


@pytest.mark.parametrize(("candidate", "current", "want"), [
    ("10", "9", True), ("9", "10", False), ("10", "10", False), ("5", "", True),
    ("abc", "abd", True),  # not integers: any different version counts as newer
])
def test_newer(candidate: str, current: str, want: bool) -> None:
    assert newer(candidate, current) is want


class TestObjects:
    def test_an_older_copy_never_replaces_a_newer_one(self) -> None:
        objects = Objects()
        assert objects.put("Job", obj("a", "5"))
        assert not objects.put("Job", obj("a", "4"))
        assert objects.get("Job", "ns/a")["metadata"]["resourceVersion"] == "5"
        assert objects.put("Job", obj("a", "6"))

    def test_a_list_read_before_a_deletion_does_not_resurrect(self) -> None:
        objects = Objects()
        objects.put("Job", obj("a", "5"))
        assert objects.drop("Job", "ns/a", "7") is not None
        assert not objects.put("Job", obj("a", "5"))  # from a list older than the deletion
        assert objects.put("Job", obj("a", "9"))  # recreated later
        assert objects.count("Job") == 1

    def test_forget_missing_after_a_list(self) -> None:
        objects = Objects()
        objects.put("Job", obj("old", "3"))
        objects.put("Job", obj("new", "12"))
        gone = objects.forget_missing("Job", listed={"ns/other"}, list_version="10")
        assert [g["metadata"]["name"] for g in gone] == ["old"]
        assert objects.get("Job", "ns/new") is not None  # newer than the list: kept

    def test_cluster_scoped_keys(self) -> None:
        objects = Objects()
        objects.put("ClusterQueue", obj("team", "1", namespace=None))
        assert objects.get("ClusterQueue", "team") is not None
