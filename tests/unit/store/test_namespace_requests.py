"""Namespace-scoped submitters: the per-namespace index, the request stream and the
scheduler's intake (on the embedded store; ACLs themselves: test_redis_tenants.py)."""

from __future__ import annotations

import json

import fakeredis
import pytest

from kuota.commands.acl import submitter_rules
from kuota.service import submission
from kuota.service.intake import Intake
from queueing.store import Store, requests


@pytest.fixture
def store() -> Store:
    store = Store(fakeredis.FakeRedis(decode_responses=True), "t")
    store.objects.apply([
        {"apiVersion": "kuota.dev/v1alpha1", "kind": "LocalQueue",
         "metadata": {"name": "lq", "namespace": ns}, "spec": {"clusterQueue": "cq"}}
        for ns in ("team-a", "team-b")], {})
    return store


def manifest(namespace: str, name: str) -> dict[str, object]:
    return submission.from_args(["true"], queue=f"{namespace}/lq", name=name,
                                requests={"cpu": 1})


def submit(store: Store, namespace: str, name: str, at: float = 1.0) -> None:
    checked = submission.StoredRules.read(store).check(manifest(namespace, name))
    store.workloads.submit(checked.key, spec=checked.manifest, queue=checked.queue,
                           priority=0, backoff_limit=0, submission=name, now=at)


def test_each_namespace_lists_only_its_own(store: Store) -> None:
    submit(store, "team-a", "a1")
    submit(store, "team-b", "b1")
    submit(store, "team-a", "a2", at=2.0)
    assert store.workloads.keys_in("team-a") == ["team-a/a1", "team-a/a2"]
    assert store.workloads.keys_in("team-b") == ["team-b/b1"]


def test_an_older_store_is_indexed_once(store: Store) -> None:
    submit(store, "team-a", "a1")
    store.redis.delete(store.keys.workloads_in("team-a"))  # as written before the index
    assert store.workloads.index_namespaces() == 1
    assert store.workloads.keys_in("team-a") == ["team-a/a1"]
    assert store.workloads.index_namespaces() == 0  # the marker says it is done


def request(store: Store, namespace: str, op: str, **fields: str) -> dict[str, object]:
    rid = store.requests.post(namespace, op, **fields)
    assert Intake(store, lambda: 5.0, ["team-a", "team-b"]).step(10.0) >= 1
    answer = store.requests.answer(namespace, rid)
    assert answer is not None
    return answer


@pytest.mark.parametrize(("namespace", "op", "fields", "want"), [
    pytest.param("team-a", "submit",
                 {"key": "team-a/x", "manifest": json.dumps(manifest("team-a", "x")),
                  "submission": "s1"},
                 {"ok": True, "key": "team-a/x"}, id="a good submission is stored"),
    pytest.param("team-a", "submit",
                 {"key": "team-b/x", "manifest": json.dumps(manifest("team-b", "x"))},
                 {"ok": False, "error": "workload team-b/x is not in namespace team-a, whose "
                                        "request stream this came through"},
                 id="another namespace's key"),
    pytest.param("team-a", "submit",
                 {"key": "team-a/x", "manifest": json.dumps(manifest("team-b", "x"))},
                 {"ok": False, "error": "the manifest is workload team-b/x, the request "
                                        "team-a/x"}, id="a manifest of another namespace"),
    pytest.param("team-a", "submit", {"key": "team-a/x", "manifest": "{nope"},
                 None, id="not JSON"),
    pytest.param("team-a", "reboot", {"key": "team-a/x"},
                 {"ok": False, "error": "unknown request 'reboot' (submit or cancel)"},
                 id="unknown op"),
    pytest.param("team-a", "cancel", {"key": "team-a/missing"},
                 {"ok": False, "error": "workload team-a/missing: not found"},
                 id="cancel of nothing"),
])
def test_the_intake_checks_every_request(store: Store, namespace: str, op: str,
                                         fields: dict[str, str],
                                         want: dict[str, object] | None) -> None:
    answer = request(store, namespace, op, **fields)
    if want is None:
        assert answer["ok"] is False and str(answer["error"]).startswith("manifest: not JSON")
    else:
        assert answer == want
    stored = store.workloads.find("team-a/x")
    assert (stored is not None) == bool(want and want["ok"])
    assert store.requests.take([namespace]) == []  # answered requests are gone


def test_a_request_taken_twice_stores_once(store: Store) -> None:
    fields = {"key": "team-a/x", "manifest": json.dumps(manifest("team-a", "x")),
              "submission": "same"}
    assert request(store, "team-a", "submit", **fields)["ok"]
    assert request(store, "team-a", "submit", **fields)["ok"]  # the same submission again
    assert store.workloads.keys_in("team-a") == ["team-a/x"]


@pytest.mark.parametrize(("namespace", "want_error"), [
    ("team-a", None), ("Team_A", "not a DNS label"), ("a" * 64, "not a DNS label"),
])
def test_submitter_rules_write_only_their_stream(namespace: str, want_error: str | None) -> None:
    if want_error is not None:
        with pytest.raises(ValueError, match=want_error):
            submitter_rules(namespace)
        return
    rules = submitter_rules(namespace, "p")
    assert "(~p:requests:team-a +xadd)" in rules
    assert "%R~p:workload:team-a/*" in rules
    assert not any(r in rules for r in ("+keys", "+scan", "+@all", "~*", "+@write"))
    # (issue 42: no category whole; @connection alone holds CLIENT PAUSE, KILL and LIST)
    assert not [r for r in rules if r.startswith("+@") or r.startswith("&")]


def forge(store: Store, namespace: str, count: int, **fields: str) -> None:
    """``count`` requests appended straight to the stream, as a hostile user would."""
    pipe = store.redis.pipeline(transaction=False)
    for i in range(count):
        pipe.xadd(store.keys.requests(namespace), {"op": "cancel", "id": f"f{i}",
                                                   "key": f"{namespace}/x{i}", **fields})
    pipe.execute()


def answer_keys(store: Store, namespace: str) -> list[str]:
    return list(store.redis.scan_iter(store.keys.answer(namespace, "*"), count=1000))


def test_a_flooded_stream_and_its_answers_are_capped(store: Store) -> None:
    """Issue 42, finding 3: 5,000 forged requests left 5,019 answer keys for an hour."""
    forge(store, "team-a", 5_000)
    forge(store, "team-b", 3)
    intake = Intake(store, lambda: 5.0, ["team-a", "team-b"], every=0.0)
    assert intake.step(10.0) == requests.BATCH + 3
    # (the batch taken is answered; of the rest, the oldest beyond the cap are dropped)
    assert store.redis.xlen(store.keys.requests("team-a")) == requests.REQUESTS_KEPT
    while intake.step(10.0):
        pass
    assert store.redis.xlen(store.keys.requests("team-a")) == 0
    assert len(answer_keys(store, "team-a")) == requests.ANSWERS_KEPT
    assert store.redis.zcard(store.keys.answers("team-a")) == requests.ANSWERS_KEPT
    assert len(answer_keys(store, "team-b")) == 3  # another namespace's are not touched
    assert store.requests.answer("team-a", "f4999") is not None  # the newest are kept


def test_answers_older_than_their_ttl_leave_the_list(store: Store) -> None:
    forge(store, "team-a", 2)
    Intake(store, lambda: 5.0, ["team-a"]).step(10.0)
    store.requests.forget_answers(["team-a"], 10.0 + requests.ANSWER_TTL + 1)
    assert store.redis.zcard(store.keys.answers("team-a")) == 0


@pytest.mark.parametrize("request_id", ["", "a:b", "x" * 65, "a b", "a*"])
def test_a_request_whose_id_cannot_name_a_key_gets_no_answer(store: Store,
                                                            request_id: str) -> None:
    submit(store, "team-a", "kept")
    store.redis.xadd(store.keys.requests("team-a"),
                     {"op": "cancel", "id": request_id, "key": "team-a/kept"})
    assert Intake(store, lambda: 5.0, ["team-a"]).step(10.0) == 1
    assert answer_keys(store, "team-a") == []
    assert store.redis.xlen(store.keys.requests("team-a")) == 0
    assert store.workloads.get("team-a/kept").state == "Pending"  # refused unread
