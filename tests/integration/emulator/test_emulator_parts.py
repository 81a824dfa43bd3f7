"""The emulator's pure parts: patches, selectors, JSONPath, ages, CRD schemas, URLs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.emulator import discovery, patches, schema, selectors, tables
from tests.emulator.server import parse_route

DOC = {"metadata": {"name": "a", "resourceVersion": "5", "finalizers": ["x"]},
       "spec": {"items": [1, 2], "name": "old"}}


class TestJSONPatch:
    @pytest.mark.parametrize(("ops", "want"), [
        ([{"op": "add", "path": "/spec/new", "value": 1}], {"new": 1}),
        ([{"op": "replace", "path": "/spec/name", "value": "n"}], {"name": "n"}),
        ([{"op": "add", "path": "/spec/items/-", "value": 3}], {"items": [1, 2, 3]}),
        ([{"op": "add", "path": "/spec/items/0", "value": 0}], {"items": [0, 1, 2]}),
        ([{"op": "remove", "path": "/spec/items/1"}], {"items": [1]}),
        ([{"op": "copy", "from": "/spec/name", "path": "/spec/copy"}], {"copy": "old"}),
        ([{"op": "move", "from": "/spec/name", "path": "/spec/moved"}], {"moved": "old"}),
        ([{"op": "test", "path": "/metadata/resourceVersion", "value": "5"},
          {"op": "remove", "path": "/metadata/finalizers"}], {"name": "old"}),
    ])
    def test_applies(self, ops: list[Any], want: dict[str, Any]) -> None:
        result = patches.json_patch(DOC, ops)
        for key, value in want.items():
            assert result["spec"].get(key) == value
        assert DOC["spec"] == {"items": [1, 2], "name": "old"}  # the input is untouched

    @pytest.mark.parametrize(("ops", "want_message"), [
        ([{"op": "test", "path": "/metadata/resourceVersion", "value": "4"}], "testing value"),
        ([{"op": "remove", "path": "/spec/absent"}], "does not exist"),
        ([{"op": "replace", "path": "/nope/x", "value": 1}], "missing key"),
        ([{"op": "add", "path": "/spec/items/7", "value": 1}], "out of range"),
        ([{"op": "jump", "path": "/spec"}], "unknown op"),
        ({"op": "add"}, "must be a list"),
    ])
    def test_rejects(self, ops: Any, want_message: str) -> None:
        with pytest.raises(patches.PatchError, match=want_message):
            patches.json_patch(DOC, ops)

    def test_a_failed_test_applies_nothing(self) -> None:
        ops = [{"op": "add", "path": "/spec/x", "value": 1},
               {"op": "test", "path": "/spec/name", "value": "other"}]
        with pytest.raises(patches.PatchError):
            patches.json_patch(DOC, ops)
        assert "x" not in DOC["spec"]


class TestMergePatches:
    def test_merge_patch_removes_with_null_and_replaces_lists(self) -> None:
        result = patches.merge_patch(DOC, {"spec": {"name": None, "items": [9]}})
        assert result["spec"] == {"items": [9]}

    def test_strategic_merge_merges_named_lists(self) -> None:
        pod = {"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}],
                        "tolerations": [{"key": "x"}]},
               "metadata": {"finalizers": ["f1"]}}
        patch = {"spec": {"containers": [{"name": "b", "image": "2"}, {"name": "c", "image": "3"}],
                          "tolerations": [{"key": "y"}],
                          "$setElementOrder/containers": [{"name": "a"}]},
                 "metadata": {"finalizers": ["f2"]}}
        result = patches.strategic_merge_patch(pod, patch)
        assert result["spec"]["containers"] == [{"name": "a", "image": "1"},
                                                {"name": "b", "image": "2"},
                                                {"name": "c", "image": "3"}]
        assert result["spec"]["tolerations"] == [{"key": "y"}]  # no merge key: replaced
        assert result["metadata"]["finalizers"] == ["f1", "f2"]

    def test_strategic_merge_directives(self) -> None:
        pod = {"spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeSelector": {"x": "1"}}}
        patch = {"spec": {"containers": [{"name": "a", "$patch": "delete"}],
                          "nodeSelector": {"$patch": "replace", "y": "2"}}}
        result = patches.strategic_merge_patch(pod, patch)
        assert result["spec"] == {"containers": [{"name": "b"}], "nodeSelector": {"y": "2"}}


def _obj(labels: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": "o", "namespace": "ns", "labels": labels or {}}, **fields}


class TestSelectors:
    @pytest.mark.parametrize(("selector", "labels", "want_match"), [
        ("app=web", {"app": "web"}, True),
        ("app==web", {"app": "db"}, False),
        ("app!=web", {}, True),
        ("app in (web, db)", {"app": "db"}, True),
        ("app notin (web,db)", {"app": "db"}, False),
        ("app", {"app": ""}, True),
        ("!app", {"app": "x"}, False),
        ("app=web,tier in (a,b),!debug", {"app": "web", "tier": "b"}, True),
        ("app=web,tier in (a,b),!debug", {"app": "web", "tier": "b", "debug": "1"}, False),
        ("kuota.dev/queue-name=main", {"kuota.dev/queue-name": "main"}, True),
        ("", {"any": "x"}, True),
    ])
    def test_labels(self, selector: str, labels: dict[str, str], want_match: bool) -> None:
        assert selectors.parse_labels(selector)(_obj(labels)) is want_match

    @pytest.mark.parametrize(("selector", "want_match"), [
        ("metadata.name=o", True),
        ("metadata.name!=o", False),
        ("metadata.namespace==ns,status.phase=Running", True),
        ("status.phase=Pending", False),
        ("spec.suspend=true", True),
        ("spec.missing=", True),
    ])
    def test_fields(self, selector: str, want_match: bool) -> None:
        obj = _obj(status={"phase": "Running"}, spec={"suspend": True})
        assert selectors.parse_fields(selector)(obj) is want_match

    @pytest.mark.parametrize("selector", ["app in (a", "a=b=c", "=x"])
    def test_bad_selectors_name_the_part(self, selector: str) -> None:
        with pytest.raises(selectors.SelectorError, match="selector"):
            selectors.parse_labels(selector)


class TestJSONPath:
    OBJ = {"metadata": {"labels": {"kuota.dev/queue": "q"}},
           "status": {"conditions": [{"type": "Admitted", "status": "False"},
                                     {"type": "Ready", "status": "True", "n": 3}]},
           "spec": {"podSets": [{"count": 2}, {"count": 5}]}}

    @pytest.mark.parametrize(("path", "want"), [
        (".status.conditions[?(@.type==\"Ready\")].status", ["True"]),
        (".status.conditions[?(@.type=='Admitted')].status", ["False"]),
        (".status.conditions[?(@.type!=\"Ready\")].type", ["Admitted"]),
        (".status.conditions[?(@.n)].type", ["Ready"]),
        (".status.conditions[?(@.n==3)].type", ["Ready"]),
        (".spec.podSets[*].count", [2, 5]),
        (".spec.podSets[1].count", [5]),
        (".spec.podSets[-1].count", [5]),
        (".metadata.labels.kuota\\.dev/queue", ["q"]),
        (".metadata.labels['kuota.dev/queue']", ["q"]),
        ("{.spec.podSets[0].count}", [2]),
        (".spec.absent", []),
    ])
    def test_find(self, path: str, want: list[Any]) -> None:
        assert tables.find(self.OBJ, tables.parse_path(path)) == want

    @pytest.mark.parametrize("path", [".a[", ".a[?(@.x=~/y/)]", "a.b"])
    def test_unsupported_paths_are_rejected(self, path: str) -> None:
        with pytest.raises(tables.JSONPathError):
            tables.parse_path(path)

    @pytest.mark.parametrize(("seconds", "want"), [
        (-5, "<invalid>"), (-1, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (150, "2m30s"),
        (600, "10m"), (3 * 3600, "3h"), (3 * 3600 + 60, "3h1m"), (9 * 3600, "9h"),
        (50 * 3600, "2d2h"), (10 * 86400, "10d"), (800 * 86400, "2y70d"), (3000 * 86400, "8y"),
    ])
    def test_human_duration(self, seconds: int, want: str) -> None:
        assert tables.human_duration(seconds) == want


class TestSchema:
    SCHEMA = {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "required": ["size"], "properties": {
                "size": {"type": "integer", "minimum": 0},
                "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5},
                "q": {"x-kubernetes-int-or-string": True},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "map": {"type": "object", "additionalProperties": {"type": "integer"}},
                "list": {"type": "array", "maxItems": 2, "items": {
                    "type": "object", "properties": {"k": {"type": "string"}}}},
            }},
        },
    }

    def test_prunes_unknown_fields_and_keeps_preserved_ones(self) -> None:
        obj = {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"}, "junk": 1,
               "spec": {"size": 1, "typo": 2, "free": {"any": {"thing": 1}},
                        "list": [{"k": "v", "drop": 1}]}}
        result, problems = schema.admit(obj, self.SCHEMA)
        assert problems == []
        assert "junk" not in result and "typo" not in result["spec"]
        assert result["spec"]["free"] == {"any": {"thing": 1}}
        assert result["spec"]["list"] == [{"k": "v"}]
        assert result["metadata"] == {"name": "n"} and result["kind"] == "X"

    def test_fills_defaults(self) -> None:
        result, _ = schema.admit({"spec": {"size": 1}}, self.SCHEMA)
        assert result["spec"]["mode"] == "a"

    @pytest.mark.parametrize(("spec", "want_problem"), [
        ({}, "spec.size: Required value"),
        ({"size": "3"}, "spec.size: Invalid value: \"string\""),
        ({"size": True}, "must be of type integer"),
        ({"size": -1}, "greater than or equal to 0"),
        ({"size": 1, "mode": "c"}, "spec.mode: Unsupported value"),
        ({"size": 1, "name": "ABC"}, "should match"),
        ({"size": 1, "name": "abcdef"}, "Too long"),
        ({"size": 1, "q": 1.5}, "integer or string"),
        ({"size": 1, "map": {"a": "x"}}, "spec.map.a"),
        ({"size": 1, "list": [{}, {}, {}]}, "Too many"),
    ])
    def test_validates(self, spec: dict[str, Any], want_problem: str) -> None:
        _, problems = schema.admit({"spec": spec}, self.SCHEMA)
        assert any(want_problem in problem for problem in problems), problems

    def test_int_or_string_accepts_both(self) -> None:
        for value in (3, "3Gi"):
            assert schema.admit({"spec": {"size": 1, "q": value}}, self.SCHEMA)[1] == []


class TestRoutes:
    @pytest.mark.parametrize(("path", "want"), [
        ("/api/v1/namespaces", ("", "v1", "namespaces", None, None, None)),
        ("/api/v1/namespaces/ns1", ("", "v1", "namespaces", None, "ns1", None)),
        ("/api/v1/namespaces/ns1/status", ("", "v1", "namespaces", None, "ns1", "status")),
        ("/api/v1/namespaces/ns1/pods", ("", "v1", "pods", "ns1", None, None)),
        ("/api/v1/namespaces/ns1/pods/p/status", ("", "v1", "pods", "ns1", "p", "status")),
        ("/apis/batch/v1/jobs", ("batch", "v1", "jobs", None, None, None)),
        ("/apis/kuota.dev/v1alpha1/clusterqueues/cq/status",
         ("kuota.dev", "v1alpha1", "clusterqueues", None, "cq", "status")),
        ("/apis/batch/v1", ("batch", "v1", None, None, None, None)),
        ("/apis/batch", (None, None, None, None, None, None)),
    ])
    def test_parse(self, path: str, want: tuple[Any, ...]) -> None:
        route = parse_route(path)
        assert (route.group, route.version, route.plural, route.namespace, route.name,
                route.subresource) == want


def test_versions_are_preferred_in_kubernetes_order() -> None:
    versions = ["v1alpha1", "v1beta1", "v2", "v1", "v1beta2", "v10", "experimental"]
    assert sorted(versions, key=discovery.version_priority) == \
        ["v10", "v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "experimental"]
