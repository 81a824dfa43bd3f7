"""A submission whose reply is lost with the connection is stored once, and the submitter
is told it succeeded: the client sends it again with the same submission id, which the
store recognises."""

from __future__ import annotations

import pytest
from harness import CQ, events, queues
from replyloss import ReplyLoss

from kuota.client import Client
from kuota.service.connection import connect

pytestmark = pytest.mark.redis


def test_a_submission_whose_reply_is_lost_is_stored_once(redis_server_url: str,
                                                          redis_prefix: str) -> None:
    with ReplyLoss(redis_server_url) as proxy:
        client = Client(connection=connect(proxy.url, prefix=redis_prefix))
        client.apply(queues(CQ("cq", {"cpu": 2})))
        client.submit(["true"], queue="default/lq-cq", name="first", requests={"cpu": 1})

        proxy.lose_reply_to(b"default/lossy")
        run = client.submit(["true"], queue="default/lq-cq", name="lossy", requests={"cpu": 1})

        assert proxy.lost == 1
        assert proxy.forwarded[b"default/lossy"] == 2  # carried out, then sent again
        assert run.key == "default/lossy"
        assert events(client, run.key).count("Submitted") == 1
        assert client.store.workloads.get(run.key).state == "Pending"
