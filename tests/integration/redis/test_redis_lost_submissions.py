"""A submission Redis acknowledged and then lost (a crash under ``appendfsync everysec``) is
named lost, not merely "not found" (issue 12): the submitter's journal remembers what was
acknowledged, and the store tells a lost submission from one it replaced or purged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import CQ, queues

from kuota.cli import main
from kuota.client import Client
from kuota.service.journal import KEEP, Entry, Journal
from queueing.store import NotFound

pytestmark = pytest.mark.redis

LOST = "lost — submitted from here at"


def _lose(client: Client, key: str) -> None:
    """What a Redis that rolls back its last second does to a submission: no trace."""
    store = client.store
    namespace = key.partition("/")[0]
    store.redis.delete(store.keys.workload(key), store.keys.history(key))
    store.redis.zrem(store.keys.workloads, key)
    store.redis.zrem(store.keys.workloads_in(namespace), key)


def _finish_and_purge(client: Client, key: str) -> None:
    store = client.store
    store.redis.hset(store.keys.workload(key), mapping={"state": "Finished", "finished_at": 1})
    store.redis.set(store.keys.lease, "s|1")
    assert store.workloads.purge_finished("s|1", [key], before=2.0) == {key: "ok:purged"}


def _replace(client: Client, key: str) -> None:
    client.store.redis.hset(client.store.keys.workload(key), "state", "Finished")
    Client(connection=client.connection).submit(["true"], queue="default/lq-cq",
                                                name=key.partition("/")[2],
                                                requests={"cpu": 1})


@pytest.mark.parametrize(("fate", "want_lost"), [
    (None, False),
    (_replace, False),
    (_finish_and_purge, False),
    (_lose, True),
])
def test_only_a_submission_the_store_has_no_trace_of_is_lost(
        redis_server_url: str, redis_prefix: str, tmp_path: Path, fate: object,
        want_lost: bool) -> None:
    client = Client(redis_server_url, prefix=redis_prefix, journal=tmp_path / "journal")
    client.apply(queues(CQ("cq", {"cpu": 2})))
    run = client.submit(["true"], queue="default/lq-cq", name="job", requests={"cpu": 1})
    if callable(fate):
        fate(client, run.key)
    assert [lost.key for lost in client.lost()] == (["default/job"] if want_lost else [])
    if want_lost:
        with pytest.raises(NotFound, match=f"workload default/job: {LOST} .*submit it again"):
            client.workload("job")
        with pytest.raises(NotFound, match=LOST):
            run.wait(1)


def test_the_cli_names_a_lost_submission(redis_server_url: str, redis_prefix: str,
                                         tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUOTA_JOURNAL", str(tmp_path / "journal"))
    store = ["--redis", redis_server_url, "--prefix", redis_prefix]
    (tmp_path / "q.yaml").write_text(queues(CQ("cq", {"cpu": 2})))
    assert main(["apply", "-f", str(tmp_path / "q.yaml"), *store]) == 0
    assert main(["submit", "-q", "default/lq-cq", "--name", "job", "--requests", "cpu=1",
                 *store, "--", "true"]) == 0
    _lose(Client(redis_server_url, prefix=redis_prefix), "default/job")
    capsys.readouterr()
    assert main(["get", "workload", "job", *store]) == 1
    assert LOST in capsys.readouterr().err
    assert main(["history", "--lost", "-o", "json", *store]) == 0
    [item] = json.loads(capsys.readouterr().out)["items"]
    assert (item["kind"], item["metadata"]["name"]) == ("LostSubmission", "job")


def test_the_journal_keeps_a_week_and_skips_what_it_cannot_read(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "kuota" / "submissions.jsonl")
    day = 86_400.0
    journal.record(Entry("s", "ns/old", "1", 0.0))
    journal.path.write_text(journal.path.read_text() + "not json\n")
    journal.record(Entry("other", "ns/x", "2", day))
    journal.record(Entry("s", "ns/new", "3", (KEEP + 2) * day))  # trims: the first is old
    assert [e.key for e in journal.entries("s")] == ["ns/new"]
    assert journal.last("s", "ns/new") == Entry("s", "ns/new", "3", (KEEP + 2) * day)
    assert journal.last("s", "ns/old") is None
