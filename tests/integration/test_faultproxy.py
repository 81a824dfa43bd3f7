"""The fault proxy (tests/faultproxy.py) in front of the emulator: what passes, what fails.

The real tier puts the same proxy in front of a real kube-apiserver; here it
is checked against the emulator, whose store shows what really reached it.
"""

from __future__ import annotations

import gzip
import http.client
import http.server
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.emulator import Emulator
from tests.emulator.clients import WatchStream, call
from tests.emulator.faults import RESET
from tests.faultproxy import FaultProxy

CM_PATH = "/api/v1/namespaces/default/configmaps"


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"k": "v"}}


@pytest.fixture
def proxy(k8s_api: Emulator) -> Iterator[FaultProxy]:
    with FaultProxy(k8s_api.url) as running:
        yield running


class TestPassingThrough:
    @pytest.mark.parametrize(("method", "path", "body", "want_status"), [
        ("POST", CM_PATH, configmap("a"), 201),
        ("GET", f"{CM_PATH}/missing", None, 404),
        ("POST", CM_PATH, {"metadata": {}}, 422),
        ("PUT", CM_PATH, configmap("a"), 405),
    ])
    def test_statuses_are_the_upstreams(self, k8s_api: Emulator, proxy: FaultProxy,
                                        method: str, path: str, body: Any,
                                        want_status: int) -> None:
        reply = call(proxy.url, method, path, body)
        assert reply.status == want_status and proxy.forwarded == 1
        assert (k8s_api.find("v1", "ConfigMap", "a", "default") is not None) is \
            (want_status == 201)

    @pytest.mark.parametrize("path", [CM_PATH, f"{CM_PATH}/a", "/version", "/api/v1"])
    def test_reads_answer_what_the_upstream_answers(self, k8s_api: Emulator,
                                                    proxy: FaultProxy, path: str) -> None:
        k8s_api.create(dict(configmap("a"), metadata={"name": "a", "namespace": "default"}))
        through, direct = call(proxy.url, "GET", path), call(k8s_api.url, "GET", path)
        assert (through.status, through.data) == (direct.status, direct.data)
        assert through.headers["Content-Type"] == direct.headers["Content-Type"]

    def test_credentials_are_passed_on(self, k8s_api: Emulator, proxy: FaultProxy) -> None:
        call(proxy.url, "GET", CM_PATH, headers={"Authorization": "Bearer secret"})
        assert list(k8s_api.handler)[-1].headers.get("Authorization") == "Bearer secret"

    def test_compressed_bodies_pass_byte_for_byte(self) -> None:
        payload = gzip.compress(b'{"kind": "Status"}')

        class Upstream(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                return None

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            with FaultProxy(f"http://127.0.0.1:{server.server_address[1]}") as proxy:
                request = urllib.request.Request(f"{proxy.url}/version",
                                                 headers={"Accept-Encoding": "gzip"})
                with urllib.request.urlopen(request, timeout=5) as answer:
                    assert answer.headers["Content-Encoding"] == "gzip"
                    assert answer.read() == payload
        finally:
            server.shutdown()
            thread.join(5)

    def test_a_watch_streams_events_as_they_happen(self, k8s_api: Emulator,
                                                   proxy: FaultProxy) -> None:
        version = call(k8s_api.url, "GET", CM_PATH).data["metadata"]["resourceVersion"]
        stream = WatchStream(proxy.url, f"{CM_PATH}?watch=true&resourceVersion={version}")
        try:
            assert stream.response.status == 200
            k8s_api.create(dict(configmap("b"), metadata={"name": "b", "namespace": "default"}))
            event = stream.next()
            assert event is not None and event["type"] == "ADDED"
            assert event["object"]["metadata"]["name"] == "b"
        finally:
            stream.close()


class TestFaults:
    @pytest.mark.parametrize(("status", "retry_after", "want_header"), [
        (429, 1, "1"),
        (503, None, None),
    ])
    def test_a_fault_answers_without_reaching_the_upstream(
            self, k8s_api: Emulator, proxy: FaultProxy, status: int, retry_after: int | None,
            want_header: str | None) -> None:
        proxy.faults.fail(status=status, retry_after=retry_after, verbs={"create"})
        reply = call(proxy.url, "POST", CM_PATH, configmap("a"))
        assert reply.status == status and reply.data["kind"] == "Status"
        assert reply.headers.get("Retry-After") == want_header
        assert k8s_api.find("v1", "ConfigMap", "a", "default") is None
        assert proxy.failed == 1 and proxy.forwarded == 0

    def test_a_reset_closes_the_connection(self, k8s_api: Emulator,
                                           proxy: FaultProxy) -> None:
        proxy.faults.fail(status=RESET, verbs={"list"})
        host, port = proxy.url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=5)
        with pytest.raises((ConnectionError, http.client.HTTPException)):
            connection.request("GET", CM_PATH)
            connection.getresponse()
        connection.close()

    def test_a_lost_answer_hides_a_write_that_landed(self, k8s_api: Emulator,
                                                     proxy: FaultProxy) -> None:
        proxy.faults.fail(status=503, verbs={"create"}, after=True)
        assert call(proxy.url, "POST", CM_PATH, configmap("a")).status == 503
        assert k8s_api.find("v1", "ConfigMap", "a", "default") is not None
        assert call(proxy.url, "POST", CM_PATH, configmap("a")).status == 409

    def test_rates_apply_to_what_passes(self, proxy: FaultProxy) -> None:
        proxy.faults.fail(status=503, times=None, rate=0.5, verbs={"list"})
        statuses = [call(proxy.url, "GET", CM_PATH).status for _ in range(100)]
        assert 30 <= statuses.count(503) <= 70 and set(statuses) == {200, 503}
