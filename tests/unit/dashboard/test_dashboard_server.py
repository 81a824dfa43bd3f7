"""The dashboard's HTTP server over a source of values: routes, fragments, versions, the
event stream, errors, and that nothing but GET is served."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from kuota.dashboard.model import Cell, Counts, Overview, TreeNode, WorkloadPage
from kuota.dashboard.server import Dashboard, application


def overview(used: int) -> Overview:
    cq = TreeNode("a", "ClusterQueue", (Cell("f", "cpu", 4000, used),), Counts(0, 1, 1))
    return Overview("test", (cq,), (), {"a": ()}, ())


class Source:
    """Hands out the overviews (or errors) it is given, one per read; the last repeats."""

    description = "a test source"

    def __init__(self, *answers: Overview | Exception) -> None:
        self.answers = list(answers)

    def overview(self) -> Overview:
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def workload(self, key: str, overview: Overview | None) -> WorkloadPage | None:
        return None


def serve(source: Source, check: Callable[[TestClient, Dashboard], Awaitable[None]]) -> None:
    async def run() -> None:
        dashboard = Dashboard(source, interval=0.05)
        async with TestClient(TestServer(application(dashboard))) as client:
            await check(client, dashboard)

    asyncio.run(run())


@pytest.mark.parametrize(("path", "want_status", "want_text"), [
    pytest.param("/", 200, 'id="total-queues">1<', id="overview"),
    pytest.param("/clusterqueues/a", 200, "ClusterQueue a", id="a queue"),
    pytest.param("/clusterqueues/nope", 404, "ClusterQueue nope does not exist", id="no queue"),
    pytest.param("/clusterqueues/a?page=x", 400, "page: not a number", id="bad page"),
    pytest.param("/localqueues/ns/nope", 404, "does not exist", id="no localqueue"),
    pytest.param("/workloads/ns/nope", 404, "Workload ns/nope does not exist", id="no workload"),
    pytest.param("/static/dashboard.js", 200, "EventSource", id="script"),
    pytest.param("/healthz", 200, "ok", id="healthy"),
])
def test_routes(path: str, want_status: int, want_text: str) -> None:
    async def check(client: TestClient, _: Dashboard) -> None:
        reply = await client.get(path)
        assert reply.status == want_status
        assert want_text in await reply.text()

    serve(Source(overview(0)), check)


def test_pages_are_read_only_and_guarded() -> None:
    async def check(client: TestClient, _: Dashboard) -> None:
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            assert (await client.request(method, "/")).status == 405
        reply = await client.get("/")
        assert "default-src 'self'" in reply.headers["Content-Security-Policy"]
        assert reply.headers["X-Content-Type-Options"] == "nosniff"

    serve(Source(overview(0)), check)


def test_a_change_bumps_the_version_and_the_event_stream_says_so() -> None:
    source = Source(overview(0))

    async def check(client: TestClient, dashboard: Dashboard) -> None:
        page = await client.get("/?fragment=1")
        first = page.headers["X-Kuota-Version"]
        text = await page.text()
        assert text.startswith("<h1>Overview</h1>")  # the fragment only, no layout
        assert 'class="seg used"' not in text
        events = await client.get("/events")
        assert (await events.content.readline()).decode().strip() == f"data: {first}"
        await events.content.readline()
        source.answers = [overview(2000)]  # an admission: 2 of 4 cpu used
        line = await asyncio.wait_for(events.content.readline(), 5)
        assert line.decode().strip() == f"data: {int(first) + 1}"
        page = await client.get("/?fragment=1")
        assert page.headers["X-Kuota-Version"] == str(int(first) + 1)
        assert 'class="seg used" style="left:0.0%;width:50.0%"' in await page.text()
        events.close()

    serve(source, check)


def test_an_unreadable_store_is_said_on_every_page_and_in_healthz() -> None:
    async def check(client: TestClient, _: Dashboard) -> None:
        reply = await client.get("/")
        assert "cannot read a test source: ConnectionError: refused" in await reply.text()
        assert (await client.get("/healthz")).status == 503

    serve(Source(ConnectionError("refused")), check)


def test_the_last_picture_stays_when_the_store_goes_away() -> None:
    async def check(client: TestClient, dashboard: Dashboard) -> None:
        for _ in range(100):
            if dashboard.error:
                break
            await asyncio.sleep(0.02)
        text = await (await client.get("/")).text()
        assert "cannot read a test source" in text and 'id="total-queues">1<' in text

    answers: list[Any] = [overview(0), ConnectionError("gone")]
    serve(Source(*answers), check)
