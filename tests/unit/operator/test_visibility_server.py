"""The visibility API server as an extension API server: who may ask, and who answers.

Served over real TLS on 127.0.0.1 with certificates from a throw-away CA; the
API server's part (front-proxy client certificate, user headers) is played by
the test's HTTPS client, and SubjectAccessReviews by a recording fake. The
real tier (tests/real/test_real_visibility.py) runs it behind a real API
server's aggregation layer.
"""

from __future__ import annotations

import asyncio
import json
import pathlib
import ssl
import urllib.error
import urllib.request
from types import SimpleNamespace
from typing import Any

import pytest

from kuota.operator import names, visibility
from tests.cluster.pki import Authority
from tests.ports import free_port
from tests.unit.operator.test_pending_workloads import engine_with_waiting

CQ_PATH = "/apis/visibility.kuota.dev/v1beta2/clusterqueues/cq/pendingworkloads"
LQ_PATH = "/apis/visibility.kuota.dev/v1beta2/namespaces/ns/localqueues/a/pendingworkloads"


class Reviews:
    """SubjectAccessReviews answered from a table of (user, resource) grants."""

    def __init__(self, grants: set[tuple[str, str]]) -> None:
        self.grants = grants
        self.asked: list[dict[str, Any]] = []

    async def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        spec = body["spec"]
        self.asked.append(spec)
        attrs = spec["resourceAttributes"]
        allowed = (spec["user"], attrs["resource"]) in self.grants or \
            any((f"group:{g}", attrs["resource"]) in self.grants for g in spec["groups"])
        return {"status": {"allowed": allowed}}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    root = tmp_path_factory.mktemp("pki")
    cluster, stranger = Authority(root / "cluster"), Authority(root / "stranger")
    return SimpleNamespace(
        ca=cluster.cert, serving=cluster.serving("tls"),
        proxy=cluster.client("front-proxy-client"),
        other_name=cluster.client("someone-else"),
        forged=stranger.client("front-proxy-client"))


def request(port: int, ca: pathlib.Path, path: str, client: tuple[pathlib.Path, pathlib.Path] |
            None, headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    context = ssl.create_default_context(cafile=str(ca))
    if client is not None:
        context.load_cert_chain(*map(str, client))
    req = urllib.request.Request(f"https://127.0.0.1:{port}{path}", headers=headers or {})
    try:
        with urllib.request.urlopen(req, context=context, timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
    except (urllib.error.URLError, ConnectionError, ssl.SSLError):
        return REFUSED, {}  # the TLS handshake failed: the certificate was not accepted


REFUSED = 0


def run(pki: SimpleNamespace, reviews: Reviews, calls: list[tuple[Any, str, dict[str, str]]],
        *, leading: bool = True) -> list[tuple[int, dict[str, Any]]]:
    """Start a server, make each (client cert, path, headers) call, stop it."""
    async def scenario() -> list[tuple[int, dict[str, Any]]]:
        ready = asyncio.Event()
        if leading:
            ready.set()
        operator: Any = SimpleNamespace(
            ready=ready, controller=SimpleNamespace(
                engine=engine_with_waiting() if leading else None,
                objects=SimpleNamespace(get=lambda kind, key: None)))
        proxy = visibility.FrontProxy(ca=pki.ca.read_text(),
                                      allowed_names=("front-proxy-client",))
        server = visibility.Server(operator, proxy, visibility.Authorizer(reviews),
                                   certfile=str(pki.serving[0]), keyfile=str(pki.serving[1]))
        port = free_port()
        await server.listen("127.0.0.1", port)
        try:
            return [await asyncio.to_thread(request, port, pki.ca, path, client, headers)
                    for client, path, headers in calls]
        finally:
            await server.stop()
    return asyncio.run(scenario())


ALICE = {"X-Remote-User": "alice"}


@pytest.mark.parametrize(("client", "headers", "want_code"), [
    pytest.param("proxy", ALICE, 200, id="the API server's proxy naming a user"),
    pytest.param(None, ALICE, 401, id="no client certificate: headers not believed"),
    pytest.param("forged", ALICE, REFUSED, id="a certificate another CA signed"),
    pytest.param("other_name", ALICE, 401, id="a certificate of the CA with another name"),
    pytest.param("proxy", {}, 401, id="the proxy naming nobody"),
])
def test_only_the_front_proxy_names_users(pki: SimpleNamespace, client: str | None,
                                          headers: dict[str, str], want_code: int) -> None:
    reviews = Reviews({("alice", "clusterqueues")})
    cert = getattr(pki, client) if client else None
    [(code, body)] = run(pki, reviews, [(cert, CQ_PATH, headers)])
    assert code == want_code, body
    if want_code == 401:
        assert body["kind"] == "Status" and body["reason"] == "Unauthorized"
    if want_code != 200:
        assert reviews.asked == []  # nothing asked on behalf of an unproven user


@pytest.mark.parametrize(("path", "headers", "want_code", "want_attrs"), [
    pytest.param(CQ_PATH, ALICE, 200,
                 {"resource": "clusterqueues", "subresource": "pendingworkloads", "name": "cq"},
                 id="granted clusterqueue"),
    pytest.param(LQ_PATH, ALICE, 403,
                 {"resource": "localqueues", "name": "a", "namespace": "ns"},
                 id="a clusterqueue grant is not a localqueue one"),
    pytest.param(LQ_PATH, {"X-Remote-User": "bob", "X-Remote-Group": "team-a"}, 200,
                 {"resource": "localqueues", "namespace": "ns"}, id="granted through a group"),
    pytest.param(CQ_PATH, {"X-Remote-User": "bob", "X-Remote-Group": "team-a"}, 403,
                 {"resource": "clusterqueues"}, id="forbidden"),
])
def test_each_read_is_authorized_by_a_subject_access_review(
        pki: SimpleNamespace, path: str, headers: dict[str, str], want_code: int,
        want_attrs: dict[str, str]) -> None:
    reviews = Reviews({("alice", "clusterqueues"), ("group:team-a", "localqueues")})
    [(code, body)] = run(pki, reviews, [(pki.proxy, path, headers)])
    assert code == want_code, body
    [asked] = reviews.asked
    assert asked["user"] == headers["X-Remote-User"]
    assert {k: asked["resourceAttributes"][k] for k in want_attrs} == want_attrs
    assert asked["resourceAttributes"]["verb"] == "get"
    assert asked["resourceAttributes"]["group"] == "visibility.kuota.dev"
    if want_code == 403:
        assert body["reason"] == "Forbidden" and '"visibility.kuota.dev"' in body["message"]
    else:
        assert body["kind"] == "PendingWorkloadsSummary" and body["items"]


def test_answers_are_remembered_per_user_and_object(pki: SimpleNamespace) -> None:
    reviews = Reviews({("alice", "clusterqueues")})
    seen = run(pki, reviews, [(pki.proxy, CQ_PATH, ALICE)] * 3
               + [(pki.proxy, CQ_PATH, {"X-Remote-User": "carol"})])
    assert [code for code, _ in seen] == [200, 200, 200, 403]
    assert [a["user"] for a in reviews.asked] == ["alice", "carol"]


@pytest.mark.parametrize(("path", "want_kind"), [
    ("/apis", "APIGroupList"),
    ("/apis/visibility.kuota.dev", "APIGroup"),
    ("/apis/visibility.kuota.dev/v1beta2", "APIResourceList"),
])
def test_discovery_needs_no_grant(pki: SimpleNamespace, path: str, want_kind: str) -> None:
    reviews = Reviews(set())
    [(code, body)] = run(pki, reviews, [(pki.proxy, path, ALICE)])
    assert (code, body["kind"]) == (200, want_kind)
    assert reviews.asked == []


def test_a_replica_that_does_not_lead_answers_503(pki: SimpleNamespace) -> None:
    [(code, body)] = run(pki, Reviews({("alice", "clusterqueues")}),
                         [(pki.proxy, CQ_PATH, ALICE)], leading=False)
    assert (code, body["reason"]) == (503, "ServiceUnavailable")
    assert "does not lead" in body["message"]


def test_bad_paging_is_a_400_naming_the_parameter(pki: SimpleNamespace) -> None:
    [(code, body)] = run(pki, Reviews({("alice", "clusterqueues")}),
                         [(pki.proxy, CQ_PATH + "?limit=ten", ALICE)])
    assert (code, body["message"]) == (400, "query parameter limit: 'ten' is not an integer")


@pytest.mark.parametrize(("data", "want"), [
    pytest.param({}, visibility.FrontProxy(), id="no front proxy configured"),
    pytest.param({"requestheader-client-ca-file": "PEM",
                  "requestheader-allowed-names": '["front-proxy-client"]',
                  "requestheader-username-headers": '["X-Remote-User"]',
                  "requestheader-group-headers": '["X-Remote-Group"]',
                  "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]'},
                 visibility.FrontProxy("PEM", ("front-proxy-client",)), id="kubeadm's"),
    pytest.param({"requestheader-client-ca-file": "PEM",
                  "requestheader-username-headers": '["X-User"]'},
                 visibility.FrontProxy("PEM", (), ("X-User",)), id="other header names"),
])
def test_front_proxy_settings_from_the_api_servers_configmap(
        data: dict[str, str], want: visibility.FrontProxy) -> None:
    assert visibility.FrontProxy.from_configmap(data) == want


@pytest.mark.parametrize(("path", "want_kind", "want_version"), [
    ("/apis/visibility.kueue.x-k8s.io/v1beta1/clusterqueues/cq/pendingworkloads",
     "PendingWorkloadsSummary", "visibility.kueue.x-k8s.io/v1beta1"),
    ("/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/ns/localqueues/a/pendingworkloads",
     "PendingWorkloadsSummary", "visibility.kueue.x-k8s.io/v1beta2"),
    ("/apis/visibility.kueue.x-k8s.io", "APIGroup", "v1"),
])
def test_serving_kueues_api_answers_under_kueues_visibility_group(
        pki: SimpleNamespace, path: str, want_kind: str, want_version: str) -> None:
    names.serve("kueue")
    try:
        reviews = Reviews({("alice", "clusterqueues"), ("alice", "localqueues")})
        [(code, body), (kuota_code, _)] = run(pki, reviews, [(pki.proxy, path, ALICE),
                                                             (pki.proxy, CQ_PATH, ALICE)])
    finally:
        names.serve("kuota")
    assert (code, body["kind"], body["apiVersion"]) == (200, want_kind, want_version)
    if want_kind == "APIGroup":
        assert [v["version"] for v in body["versions"]] == ["v1beta2", "v1beta1"]
    else:
        assert reviews.asked[0]["resourceAttributes"]["group"] == "visibility.kueue.x-k8s.io"
    assert kuota_code == 404, "one group at a time: kuota.dev's is not served then"
