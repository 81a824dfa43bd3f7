"""The dashboard in a real browser, over a real Redis with a scheduler and a worker running.

What a person sees: the counts, the bars, the pending list with the reason each
workload waits (the words ``kuota why`` uses), a workload's history — and the
page changing by itself, without a reload, when the scheduler admits a job.
One screenshot per page is saved (``dashboard-*.png`` under
$KUOTA_TEST_ARTIFACTS/dashboard, else a temporary directory); a failing test
leaves ``<test>-failure.png`` there.
"""

from __future__ import annotations

import shlex
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from kuota import explanation
from kuota.client import Client
from kuota.service import rebuild
from tests.integration.dashboard import browser
from tests.integration.redis.harness import CQ, local_cluster, node, queues, wait_for

pytestmark = pytest.mark.redis

SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]


@pytest.fixture
def stack(redis_server_url: str, redis_prefix: str) -> Iterator[tuple[Client, str]]:
    """Queues ``a`` (4 cpu, may borrow 4) and ``b`` (4 cpu) in cohort ``research``, a
    scheduler and one 16-cpu worker, and a dashboard reading that prefix."""
    client = Client(redis_server_url, prefix=redis_prefix)
    client.apply(queues(CQ("a", {"cpu": 4}, cohort="research", borrowing_limit={"cpu": 4}),
                        CQ("b", {"cpu": 4}, cohort="research")))
    with local_cluster(redis_server_url, redis_prefix, [node("pool", "n1", "cpu=16")]), \
            browser.dashboard("--redis", redis_server_url, "--prefix", redis_prefix,
                              "--interval", "0.2") as dash:
        browser.wait_ready(dash.url)
        yield client, dash.url


def shot(page: Any, name: str) -> None:
    path = browser.artifacts() / f"dashboard-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")


def used_width(page: Any, queue: str) -> str:
    return str(page.locator(f'tr[data-name="{queue}"] .bar .seg.used').first
               .evaluate("e => e.style.width"))


def test_bars_and_counts_change_live_when_a_job_is_admitted(
        stack: tuple[Client, str], page: Any) -> None:
    client, url = stack
    page.goto(url + "/")
    page.evaluate("window.notReloaded = true")
    row = page.locator('tr[data-name="a"]')
    assert row.locator(".seg.used").count() == 0  # nothing used: no segment
    assert row.locator("td.admitted").inner_text() == "0"

    client.submit(SLEEP, queue="default/lq-a", name="two-cpu", requests={"cpu": 2})
    page.wait_for_function(
        """() => { const s = document.querySelector('tr[data-name="a"] .seg.used');
                   return s && s.style.width === '25%'; }""")  # 2 of 4 + 4 borrowable
    assert row.locator("td.admitted").inner_text() == "1"
    assert "2 / 4" in row.locator(".nums").inner_text()

    client.submit(SLEEP, queue="default/lq-a", name="borrows", requests={"cpu": 4})
    page.wait_for_function(
        """() => document.querySelector('tr[data-name="a"] .seg.borrowed') !== null""")
    assert used_width(page, "a") == "50%"  # own quota full
    assert page.locator('tr[data-name="a"] .seg.borrowed').evaluate(
        "e => e.style.width") == "25%"
    assert page.locator('tr[data-name="b"] .seg.lent').evaluate("e => e.style.width") == "50%"
    assert page.evaluate("window.notReloaded") is True
    assert page.locator(".live").inner_text().startswith("live")
    shot(page, "overview")


def test_pending_positions_and_reasons_as_kuota_why(stack: tuple[Client, str],
                                                    page: Any) -> None:
    client, url = stack
    client.submit(SLEEP, queue="default/lq-b", name="fills-b", requests={"cpu": 4})
    for name in ("first", "second"):  # 5 cpu: more than b's 4 still free (4 from a)
        client.submit(SLEEP, queue="default/lq-b", name=name, requests={"cpu": 5})
    page.goto(url + "/clusterqueues/b")
    page.evaluate("window.notReloaded = true")
    page.wait_for_function("() => document.querySelector('#cq-pending').textContent === '2'")
    rows = page.locator("table.pending tbody tr")
    assert rows.count() == 2
    assert rows.nth(0).locator("td.position").inner_text() == "0"
    assert "default/first" in rows.nth(0).inner_text()
    second = rows.nth(1)
    assert second.locator("td.position").inner_text() == "1"
    # The words `kuota why` prints for it: "Waiting: <reason>: <message>"; the leader
    # rewrites the reason as it tries it, and the page follows.
    def same_words() -> bool:
        shown = second.locator("td.reason").inner_text()
        why = explanation.why(explanation.from_record(
            client.store.workloads.get("default/second")), rebuild.load(client.store).engine)
        return f"Waiting: {shown}" in why

    wait_for("the page to show what kuota why says", same_words)
    shot(page, "clusterqueue")

    client.workload("default/fills-b").cancel()
    page.wait_for_function("() => document.querySelector('#cq-pending').textContent === '1'")
    assert page.evaluate("window.notReloaded") is True

    page.goto(url + "/localqueues/default/lq-b")
    assert page.locator("table.pending tbody tr").count() == 1
    shot(page, "localqueue")


def test_workload_page_shows_its_history(stack: tuple[Client, str], page: Any) -> None:
    client, url = stack
    client.submit(SLEEP, queue="default/lq-a", name="runs", requests={"cpu": 1})
    wait_for("placement", lambda: client.store.workloads.get("default/runs").placement)

    page.goto(url + "/")
    page.locator('table.running a[href="/workloads/default/runs"]').click()
    page.wait_for_url(url + "/workloads/default/runs")
    assert page.locator("h1").inner_text() == "Workload default/runs"
    events = page.locator("table.history td.event").all_inner_texts()
    assert events[:3] == ["Submitted", "Admitted", "Placed"]
    facts = page.locator("dl.facts").inner_text()
    assert "n1" in facts
    # Issue 41: what it asked for, what it runs, and its output a click away.
    assert "1 pod × cpu=1" in facts and shlex.join(SLEEP) in facts, facts
    assert page.locator("a.logs").get_attribute("href") == "/workloads/default/runs/logs"
    # Issue 41: a single pool's workload is not explained by multi-cluster dispatch.
    why = page.locator("pre.why").inner_text()
    assert "Workload default/runs is Admitted in ClusterQueue a" in why
    assert "dispatch" not in why.lower(), why

    client.workload("default/runs").cancel()
    page.wait_for_function("() => [...document.querySelectorAll('table.history td.event')]"
                           ".some(e => e.textContent === 'Cancelled')")
    shot(page, "workload")


def test_read_only_and_unknown_pages(stack: tuple[Client, str], page: Any) -> None:
    _client, url = stack
    request = urllib.request.Request(url + "/", data=b"x", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=5)
    assert refused.value.code == 405
    response = page.goto(url + "/clusterqueues/nope")
    assert response.status == 404
    assert "ClusterQueue nope does not exist" in page.locator("main").inner_text()
