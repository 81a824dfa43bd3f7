"""The scheduler extender over real HTTP on 127.0.0.1: real JSON bodies in both
the ``Nodes`` and ``NodeNames`` forms, answers checked field by field."""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import ssl
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from kuota import extender as ext
from kuota.commands import extender as command
from kuota.operator.certs import ServingCertificate
from placement.cache import ClusterCache
from placement.memo import MemoizedScorer
from placement.model import Node, PodRequirements
from placement.scoring import (
    ResourceAllocationScorer,
    ResourceSpec,
    Strategy,
    WeightedScorer,
)
from placement.topology import Topology, TopologyScorer
from tests.cluster.pki import Authority
from tests.ports import free_port
from tests.webhook_certs import publish

RACK = "cloud.provider.com/topology-rack"
HOST = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"


# -- builders -----------------------------------------------------------------

def node_object(name: str, gpus: int = 8, *, rack: str = "r1", taints: Sequence[dict[str, str]]
                = (), unschedulable: bool = False) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {HOST: name, RACK: rack}},
        "spec": {"taints": list(taints), "unschedulable": unschedulable},
        "status": {"allocatable": {"cpu": "64", "memory": "512Gi", GPU: str(gpus),
                                   "pods": "110"}},
    }


def pod_object(name: str = "w-0", gpus: int = 1, *, scheduler: str = "kuota-binpack",
               node: str | None = None, labels: Mapping[str, str] | None = None,
               phase: str = "Pending", uid: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "train", "image": "trainer",
                        "resources": {"requests": {"cpu": "4", GPU: str(gpus)},
                                      "limits": {GPU: str(gpus)}}}],
    }
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml", "uid": uid or f"uid-{name}",
                         "labels": dict(labels or {})},
            "spec": spec, "status": {"phase": phase}}


def filled_cache(nodes: Sequence[dict[str, Any]], pods: Sequence[dict[str, Any]] = ()
                 ) -> ClusterCache:
    cache = ClusterCache()
    feeder = ext.CacheFeeder(cache)
    feeder.replace_nodes(nodes)
    feeder.replace_pods(pods)
    cache.synced = True
    return cache


BINPACK = ResourceAllocationScorer(Strategy.MOST_ALLOCATED, (ResourceSpec(GPU),))


def make_extender(cache: ClusterCache, scorer: Any = BINPACK) -> ext.Extender:
    return ext.Extender(ext.ExtenderSettings(scorer=scorer), cache)


Call = Callable[[str, Any], tuple[int, Any]]


def call_app(extender: ext.Extender, requests: Sequence[tuple[str, str, Any]]
             ) -> list[tuple[int, Any]]:
    """Serve the app on 127.0.0.1 and send (method, path, body) requests;
    a ``str`` body is sent as is, anything else as JSON."""
    async def scenario() -> list[tuple[int, Any]]:
        async with TestClient(TestServer(ext.make_app(extender), host="127.0.0.1")) as client:
            out = []
            for method, path, body in requests:
                data = body if isinstance(body, str) else json.dumps(body)
                async with client.request(method, path, data=data,
                                          headers={"Content-Type": "application/json"}) as resp:
                    text = await resp.text()
                    try:
                        out.append((resp.status, json.loads(text)))
                    except json.JSONDecodeError:
                        out.append((resp.status, text))
            return out
    return asyncio.run(scenario())


def post(extender: ext.Extender, path: str, body: Any) -> tuple[int, Any]:
    return call_app(extender, [("POST", path, body)])[0]


# -- filter -------------------------------------------------------------------

NODES = [node_object("a"), node_object("b"), node_object("c", taints=[
    {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]),
    node_object("d", unschedulable=True)]
FULL_B = pod_object("busy", 8, node="b")


def test_filter_node_names_form() -> None:
    extender = make_extender(filled_cache(NODES, [FULL_B]))
    status, answer = post(extender, "/filter", {
        "Pod": pod_object(), "Nodes": None, "NodeNames": ["a", "b", "c", "d", "ghost"]})
    assert status == 200
    assert answer["NodeNames"] == ["a"]
    assert answer["Nodes"] is None
    assert answer["FailedNodes"] == {"b": "Insufficient nvidia.com/gpu"}
    assert answer["FailedAndUnresolvableNodes"] == {
        "c": "node(s) had untolerated taint {dedicated: infra}",
        "d": "node(s) were unschedulable",
        "ghost": "node is not in the kuota extender's cache yet",
    }
    assert answer["Error"] == ""


def test_filter_nodes_form_echoes_the_passing_node_objects() -> None:
    # Without --node-cache the cache holds pods only; node facts come from the body.
    extender = make_extender(filled_cache([], [FULL_B]))
    node_list = {"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "7"},
                 "items": NODES}
    status, answer = post(extender, "/filter", {"Pod": pod_object(), "Nodes": node_list,
                                                "NodeNames": None})
    assert status == 200
    assert answer["NodeNames"] is None
    assert answer["Nodes"]["kind"] == "NodeList"
    assert answer["Nodes"]["metadata"] == {"resourceVersion": "7"}
    assert answer["Nodes"]["items"] == [NODES[0]]
    assert answer["FailedNodes"] == {"b": "Insufficient nvidia.com/gpu"}
    assert set(answer["FailedAndUnresolvableNodes"]) == {"c", "d"}


def test_lowercase_field_names_are_accepted_like_go_does() -> None:
    extender = make_extender(filled_cache(NODES))
    status, answer = post(extender, "/filter", {"pod": pod_object(), "nodenames": ["a", "b"]})
    assert (status, answer["NodeNames"]) == (200, ["a", "b"])


def test_pods_of_other_schedulers_pass_untouched() -> None:
    extender = make_extender(filled_cache(NODES, [FULL_B]))
    other = pod_object(scheduler="default-scheduler")
    (f_status, filtered), (p_status, scores) = call_app(extender, [
        ("POST", "/filter", {"Pod": other, "NodeNames": ["a", "b", "c"]}),
        ("POST", "/prioritize", {"Pod": other, "NodeNames": ["a", "b"]})])
    assert (f_status, filtered["NodeNames"], filtered["FailedNodes"]) == (200, ["a", "b", "c"], {})
    assert (p_status, scores) == (200, [{"Host": "a", "Score": 0}, {"Host": "b", "Score": 0}])


# -- prioritize ---------------------------------------------------------------

def test_prioritize_binpacks_on_a_0_to_10_scale() -> None:
    # a: 6 of 8 used → (6+1)*100//8 = 87 → 8; e: empty → 12 → 1; f: 7 used → 100 → 10
    pods = [pod_object("p1", 6, node="a"), pod_object("p2", 7, node="f")]
    extender = make_extender(filled_cache([node_object("a"), node_object("e"),
                                           node_object("f")], pods))
    status, answer = post(extender, "/prioritize", {"Pod": pod_object(),
                                                    "NodeNames": ["e", "a", "f", "ghost"]})
    assert status == 200
    assert answer == [{"Host": "e", "Score": 1}, {"Host": "a", "Score": 8},
                      {"Host": "f", "Score": 10}, {"Host": "ghost", "Score": 0}]


def test_prioritize_nodes_form_uses_cached_usage() -> None:
    extender = make_extender(filled_cache([], [pod_object("p1", 3, node="a")]))
    status, answer = post(extender, "/prioritize", {
        "Pod": pod_object(), "Nodes": {"items": [node_object("a"), node_object("e")]}})
    # a: (3+1)*100//8 = 50 → 5; e: 12 → 1
    assert (status, answer) == (200, [{"Host": "a", "Score": 5}, {"Host": "e", "Score": 1}])


def test_prioritize_pulls_a_gang_into_its_rack() -> None:
    gang = {"kueue.x-k8s.io/pod-group-name": "job-1"}
    nodes = [node_object("x1", rack="r1"), node_object("x2", rack="r1"),
             node_object("y1", rack="r2")]
    placed = [pod_object("m-0", 8, node="x1", labels=gang)]
    scorer = WeightedScorer(((BINPACK, 1), (TopologyScorer(Topology((RACK, HOST))), 1)))
    extender = make_extender(filled_cache(nodes, placed), scorer)
    # x2: binpack 12, topology 50 (same rack) → 31 → 3; y1: binpack 12 → 6 → 0
    _, mate = post(extender, "/prioritize", {"Pod": pod_object("m-1", labels=gang),
                                             "NodeNames": ["x2", "y1"]})
    _, stranger = post(extender, "/prioritize", {"Pod": pod_object("s-0"),
                                                 "NodeNames": ["x2", "y1"]})
    assert mate == [{"Host": "x2", "Score": 3}, {"Host": "y1", "Score": 0}]
    assert stranger == [{"Host": "x2", "Score": 0}, {"Host": "y1", "Score": 0}]


# -- bad requests and failures -------------------------------------------------

BAD_BODIES = [
    ("not JSON", "{not json", "request body is not JSON"),
    ("a JSON list", [1, 2], "ExtenderArgs must be a JSON object"),
    ("no pod", {"NodeNames": ["a"]}, "ExtenderArgs.Pod must be a v1.Pod object"),
    ("no nodes at all", {"Pod": pod_object(), "Nodes": None, "NodeNames": None},
     "ExtenderArgs needs Nodes (a v1.NodeList) or NodeNames"),
    ("names not strings", {"Pod": pod_object(), "NodeNames": ["a", 3]},
     "ExtenderArgs.NodeNames must be a list of strings"),
    ("nodes not a list", {"Pod": pod_object(), "Nodes": {"items": "a"}},
     "ExtenderArgs.Nodes must be a v1.NodeList with an items list"),
    ("a node not an object", {"Pod": pod_object(), "Nodes": {"items": ["a"]}},
     "ExtenderArgs.Nodes.items[0] must be a v1.Node object"),
    ("a node without allocatable numbers", {"Pod": pod_object(), "Nodes": {"items": [
        {"metadata": {"name": "a"}, "status": {"allocatable": {"cpu": "many"}}}]}},
     "ExtenderArgs.Nodes.items[0]: node a: status.allocatable.cpu: 'many' is not a quantity"),
    ("a bad pod request", {"Pod": {"metadata": {"name": "p", "namespace": "ml"},
                                   "spec": {"schedulerName": "kuota-binpack", "containers": [
                                       {"resources": {"requests": {GPU: "one"}}}]}},
                           "NodeNames": ["a"]},
     "ExtenderArgs.Pod: pod ml/p: spec.containers[0].resources.requests.nvidia.com/gpu: "
     "'one' is not a quantity"),
]


@pytest.mark.parametrize("path", ["/filter", "/prioritize"])
@pytest.mark.parametrize("name, body, want_error", BAD_BODIES, ids=[b[0] for b in BAD_BODIES])
def test_bad_requests_get_400_and_the_server_lives_on(path: str, name: str, body: Any,
                                                      want_error: str) -> None:
    extender = make_extender(filled_cache(NODES))
    (status, answer), (health, text) = call_app(extender, [("POST", path, body),
                                                           ("GET", "/healthz", "")])
    assert status == 400
    assert list(answer) == ["Error"]
    assert answer["Error"].startswith(want_error)  # the parser's detail may follow
    assert (health, text) == (200, "ok")


class ExplodingScorer:
    def score_nodes(self, pod: PodRequirements, nodes: Sequence[Node],
                    peers: Sequence[Node] = ()) -> list[int]:
        raise RuntimeError("scorer bug")


def test_an_internal_failure_is_a_500_not_a_crash() -> None:
    extender = make_extender(filled_cache(NODES), ExplodingScorer())
    (status, answer), (health, _) = call_app(extender, [
        ("POST", "/prioritize", {"Pod": pod_object(), "NodeNames": ["a"]}),
        ("GET", "/healthz", "")])
    assert (status, answer) == (500, {"Error": "internal error: scorer bug"})
    assert health == 200


def test_limits_come_from_the_options() -> None:
    assert command.build_limits(options()) == ext.Limits(4 * 1024 * 1024, 10.0, 10.0)
    limits = command.build_limits(options("--max-body", "64Mi", "--header-timeout", "2.5",
                                          "--read-timeout", "30"))
    assert limits == ext.Limits(64 * 1024 * 1024, 2.5, 30.0)
    assert limits.server_options() == {"keepalive_timeout": 2.5, "lingering_time": 30.0,
                                       "auto_decompress": False}


def test_a_body_over_the_bound_is_413_and_one_under_it_is_served() -> None:
    extender = make_extender(filled_cache(NODES))
    limits = ext.Limits(max_body=2048)
    padded = {"Pod": pod_object(), "NodeNames": ["a"], "pad": "x" * 1000}

    async def scenario() -> list[tuple[int, str]]:
        async with TestClient(TestServer(ext.make_app(extender, limits), host="127.0.0.1",
                                         **limits.server_options())) as client:
            out = []
            for body in (padded, {**padded, "pad": "x" * 2100}):
                async with client.post("/filter", data=json.dumps(body)) as resp:
                    out.append((resp.status, (await resp.json())["Error"]))
            return out

    assert asyncio.run(scenario()) == [
        (200, ""),
        (413, f"request body of {len(json.dumps(padded)) + 1100} bytes is too large: at "
              "most 2048 bytes and 128 JSON objects and arrays (--max-body)")]


def test_wrong_method_is_refused() -> None:
    extender = make_extender(filled_cache(NODES))
    (status, _), = call_app(extender, [("GET", "/filter", "")])
    assert status == 405


def test_readyz_waits_for_the_cache() -> None:
    cache = ClusterCache()
    extender = make_extender(cache)
    (before, _), = call_app(extender, [("GET", "/readyz", "")])
    ext.CacheFeeder(cache).replace_nodes([node_object("a")])
    cache.synced = True
    (after, text), = call_app(extender, [("GET", "/readyz", "")])
    assert (before, after, text) == (503, 200, "ok: 1 nodes, 0 bound pods")


# -- the cache feeder -----------------------------------------------------------

def test_feeder_follows_node_and_pod_events() -> None:
    cache = ClusterCache()
    feeder = ext.CacheFeeder(cache)
    feeder.node_event("ADDED", node_object("a"))
    feeder.pod_event("ADDED", pod_object("p", 2, labels={"batch.kubernetes.io/job-name": "j"}))
    assert cache.node("a").requested == {}  # type: ignore[union-attr]
    feeder.pod_event("MODIFIED", pod_object("p", 2, node="a", phase="Running",
                                            labels={"batch.kubernetes.io/job-name": "j"}))
    assert cache.node("a").requested == {GPU: 2000, "cpu": 4000, "pods": 1000}  # type: ignore[union-attr]
    assert cache.gang_nodes("ml/j") == ["a"]
    feeder.pod_event("MODIFIED", pod_object("p", 2, node="a", phase="Succeeded"))
    assert cache.node("a").requested == {}  # type: ignore[union-attr]
    feeder.pod_event("DELETED", pod_object("p", 2, node="a"))
    feeder.node_event("MODIFIED", node_object("a", gpus=4))
    assert cache.node("a").allocatable[GPU] == 4000  # type: ignore[union-attr]
    feeder.node_event("DELETED", node_object("a"))
    assert cache.node("a") is None


def test_feeder_skips_malformed_objects(caplog: pytest.LogCaptureFixture) -> None:
    cache = ClusterCache()
    feeder = ext.CacheFeeder(cache)
    feeder.node_event("ADDED", {"metadata": {"name": "bad"},
                                "status": {"allocatable": {"cpu": "lots"}}})
    feeder.node_event("ADDED", node_object("good"))
    assert cache.node_names() == ["good"]
    assert "node bad: status.allocatable.cpu" in caplog.text


def test_relists_drop_what_disappeared() -> None:
    cache = filled_cache([node_object("a"), node_object("b")],
                         [pod_object("p", node="a"), pod_object("q", node="b")])
    feeder = ext.CacheFeeder(cache)
    feeder.replace_nodes([node_object("b")])
    feeder.replace_pods([pod_object("q", node="b")])
    assert cache.node_names() == ["b"]
    assert cache.pod_uids() == ["uid-q"]


# -- the command ----------------------------------------------------------------

def options(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    command.register(parser.add_subparsers())
    return parser.parse_args(["extender", *argv])


def test_options_build_the_scorer() -> None:
    plain = command.build_scorer(options("--topology-weight", "0", "--weights", "nvidia.com/gpu=5"))
    assert isinstance(plain, MemoizedScorer)
    assert plain.inner == ResourceAllocationScorer(Strategy.MOST_ALLOCATED, (ResourceSpec(GPU, 5),))
    combined = command.build_scorer(options("--strategy", "RequestedToCapacityRatio",
                                            "--shape", "0=10,100=0", "--topology-levels",
                                            f"{RACK},{HOST}", "--topology-weight", "2"))
    assert isinstance(combined, WeightedScorer)
    (resources, w1), (topology, w2) = combined.parts
    assert (w1, w2) == (1, 2)
    assert topology == TopologyScorer(Topology((RACK, HOST)))
    assert resources.inner.shape[0].score == 10  # type: ignore[attr-defined]
    settings = command.build_settings(options("--scheduler-name", "*", "--gang-label", "team"))
    assert (settings.scheduler_names, settings.gang_labels) == (frozenset(), ("team",))


@pytest.mark.parametrize("argv, want_error", [
    (["--listen", "nowhere"], "--listen: 'nowhere' is not HOST:PORT"),
    (["--weights", "cpu=0.5"], "--weights: cpu needs a whole-number weight"),
    (["--weights", "cpu=500"], "weight 500 is not in 1..100"),
    (["--strategy", "RequestedToCapacityRatio", "--shape", "0=11"], "score 11 is not in 0..10"),
    (["--tls-cert", "cert.pem"], "--tls-cert and --tls-key go together"),
    (["--client-ca", "ca.pem"], "--client-ca needs --tls-cert and --tls-key"),
    (["--probe-listen", "8081"], "--probe-listen: '8081' is not HOST:PORT"),
    (["--listen", "0.0.0.0:99999"], "--listen: '0.0.0.0:99999' is not HOST:PORT"),
    (["--max-body", "lots"], "--max-body: 'lots' is not a quantity"),
    (["--max-body", "100"], "--max-body: 100 is less than 1Ki"),
    (["--read-timeout", "0"], "--read-timeout: 0 is not a positive number of seconds"),
    (["--header-timeout", "nan"], "--header-timeout: nan is not a positive number of seconds"),
])
def test_bad_options_exit_2(argv: list[str], want_error: str,
                            capsys: pytest.CaptureFixture[str]) -> None:
    assert command.run(options(*argv)) == 2
    assert want_error in capsys.readouterr().err


# -- TLS and client authentication ----------------------------------------------

REFUSED = 0  # the connection failed: no HTTP status at all


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The extender's CA (serving and kube-scheduler's client certificate), and a stranger's."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl program")
    root = tmp_path_factory.mktemp("extender-pki")
    ours = Authority(root / "ours")
    # The same name as kube-scheduler's, signed by a CA the extender does not trust.
    forged = Authority(root / "stranger").client("kuota-extender-client")
    return SimpleNamespace(ca=ours.cert, serving=ours.serving("kuota-extender"),
                           scheduler=ours.client("kuota-extender-client"), forged=forged)


Request = tuple[str, str, Any]  # "https" or "probes", method, path


async def _ask(url: str, method: str, client_ssl: ssl.SSLContext | bool) -> tuple[int, Any]:
    body = {"Pod": pod_object(), "NodeNames": ["a", "c"]} if method == "POST" else None
    try:
        async with aiohttp.ClientSession() as session, session.request(
                method, url, json=body, ssl=client_ssl,
                timeout=aiohttp.ClientTimeout(total=5)) as resp:
            text = await resp.text()
            return resp.status, (json.loads(text) if resp.content_type ==
                                 "application/json" else text)
    except (aiohttp.ClientError, ssl.SSLError, ConnectionError):
        return REFUSED, None


def client_context(ca: Path, cert: tuple[Path, Path] | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca))
    if cert is not None:
        context.load_cert_chain(*map(str, cert))
    return context


async def serving(certificate: ServingCertificate, extender: ext.Extender
                  ) -> tuple[web.AppRunner, int, int]:
    """The extender over HTTPS and its probes over plain HTTP, as ``kuota extender`` runs them."""
    app = ext.make_app(extender)
    probes = free_port()
    app.cleanup_ctx.append(ext.serving_alongside(ext.make_probe_app(extender), "127.0.0.1",
                                                 probes))
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=certificate.context)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, port, probes


def call_tls(certificate: ServingCertificate, client_ssl: ssl.SSLContext | bool,
             requests: Sequence[Request]) -> list[tuple[int, Any]]:
    extender = make_extender(filled_cache(NODES))

    async def scenario() -> list[tuple[int, Any]]:
        runner, port, probes = await serving(certificate, extender)
        try:
            return [await _ask(f"https://127.0.0.1:{port}{path}" if where == "https" else
                               f"http://127.0.0.1:{probes}{path}", method, client_ssl)
                    for where, method, path in requests]
        finally:
            await runner.cleanup()
    return asyncio.run(scenario())


FILTER = ("https", "POST", "/filter")


@pytest.mark.parametrize(("client", "want_status"), [
    pytest.param("scheduler", 200, id="kube-scheduler's certificate: served"),
    pytest.param(None, REFUSED, id="no client certificate: refused in the handshake"),
    pytest.param("forged", REFUSED, id="same name, another CA: refused"),
    pytest.param("serving", REFUSED,
                 id="the CA's serving certificate is not a client certificate: refused"),
])
def test_only_clients_of_the_client_ca_are_served(pki: SimpleNamespace, client: str | None,
                                                   want_status: int) -> None:
    certificate = command.serving_certificate(options(
        "--tls-cert", str(pki.serving[0]), "--tls-key", str(pki.serving[1]),
        "--client-ca", str(pki.ca)))
    assert certificate is not None
    cert = getattr(pki, client) if client else None
    [(status, answer)] = call_tls(certificate, client_context(pki.ca, cert), [FILTER])
    assert status == want_status, answer
    if want_status == 200:
        assert answer["NodeNames"] == ["a"]


def test_probes_are_plain_http_on_their_own_port_and_nothing_else_is(
        pki: SimpleNamespace) -> None:
    certificate = ext.serving_certificate(str(pki.serving[0]), str(pki.serving[1]), str(pki.ca))
    answers = call_tls(certificate, False, [
        ("probes", "GET", "/healthz"), ("probes", "GET", "/readyz"),
        ("probes", "POST", "/filter"), ("probes", "POST", "/prioritize"),
        ("https", "GET", "/healthz")])
    assert answers == [(200, "ok"), (200, "ok: 4 nodes, 0 bound pods"),
                       (404, "404: Not Found"), (404, "404: Not Found"),
                       (REFUSED, None)]  # the kubelet has no client certificate for the HTTPS port


def test_tls_without_client_ca_serves_any_client(pki: SimpleNamespace) -> None:
    certificate = command.serving_certificate(options(
        "--tls-cert", str(pki.serving[0]), "--tls-key", str(pki.serving[1])))
    assert certificate is not None
    [(status, answer)] = call_tls(certificate, client_context(pki.ca, None), [FILTER])
    assert (status, answer["NodeNames"]) == (200, ["a"])


def test_renewed_certificates_and_a_rotated_client_ca_are_taken_up_without_a_restart(
        pki: SimpleNamespace, tmp_path: Path) -> None:
    volume = tmp_path / "certs"  # a mounted Secret: tls.crt, tls.key, ca.crt
    publish(volume, secret_files(pki.serving, pki.ca), "1")
    certificate = ext.serving_certificate(str(volume / "tls.crt"), str(volume / "tls.key"),
                                          str(volume / "ca.crt"))
    new = Authority(tmp_path / "new-ca")
    new_client = new.client("kuota-extender-client")
    extender = make_extender(filled_cache(NODES))

    async def status(port: int, ca: Path, cert: tuple[Path, Path]) -> int:
        return (await _ask(f"https://127.0.0.1:{port}/filter", "POST",
                           client_context(ca, cert)))[0]

    async def scenario() -> tuple[list[int], list[int]]:
        runner, port, _ = await serving(certificate, extender)
        follow = asyncio.ensure_future(ext.follow_certificate(certificate, interval=0.05))
        try:
            before = [await status(port, pki.ca, pki.scheduler),
                      await status(port, new.cert, new_client)]
            publish(volume, secret_files(new.serving("kuota-extender"), new.cert), "2")
            deadline = asyncio.get_running_loop().time() + 5
            while await status(port, new.cert, new_client) != 200:
                assert asyncio.get_running_loop().time() < deadline, "renewal not taken up"
                await asyncio.sleep(0.05)
            after = [await status(port, pki.ca, pki.scheduler),
                     await status(port, new.cert, new_client)]
            return before, after
        finally:
            follow.cancel()
            await runner.cleanup()

    before, after = asyncio.run(scenario())
    assert before == [200, REFUSED]
    assert after == [REFUSED, 200]  # the old CA's client is no longer trusted


def secret_files(pair: tuple[Path, Path], ca: Path) -> dict[str, bytes]:
    return {"tls.crt": pair[0].read_bytes(), "tls.key": pair[1].read_bytes(),
            "ca.crt": ca.read_bytes()}


@pytest.mark.parametrize(("argv", "want_error"), [
    pytest.param(["--tls-cert", "{missing}", "--tls-key", "{key}"],
                 "--tls-cert: cannot read {missing}: No such file or directory", id="no cert"),
    pytest.param(["--tls-cert", "{cert}", "--tls-key", "{missing}"],
                 "--tls-key: cannot read {missing}: No such file or directory", id="no key"),
    pytest.param(["--tls-cert", "{cert}", "--tls-key", "{key}", "--client-ca", "{missing}"],
                 "--client-ca: cannot read {missing}: No such file or directory", id="no CA"),
    pytest.param(["--tls-cert", "{cert}", "--tls-key", "{directory}"],
                 "--tls-key: cannot read {directory}: Is a directory", id="unreadable key"),
    pytest.param(["--tls-cert", "{cert}", "--tls-key", "{other_key}"],
                 "--tls-cert/--tls-key: {cert} and {other_key} are not a PEM certificate and "
                 "its private key", id="key of another certificate"),
    pytest.param(["--tls-cert", "{cert}", "--tls-key", "{key}", "--client-ca", "{key}"],
                 "--client-ca: {key} holds no PEM CA certificate", id="CA file not a certificate"),
])
def test_bad_tls_files_exit_2_naming_the_flag(pki: SimpleNamespace, tmp_path: Path,
                                              argv: list[str], want_error: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    names = {"cert": pki.serving[0], "key": pki.serving[1], "missing": tmp_path / "nope.pem",
             "directory": tmp_path, "other_key": pki.scheduler[1]}
    assert command.run(options(*(a.format(**names) for a in argv))) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kuota extender: " + want_error.format(**names)), err
    assert "\n" not in err  # one line


@pytest.mark.parametrize(("host", "tls", "client_ca", "want_warning"), [
    ("127.0.0.1", False, False, False),
    ("0.0.0.0", False, False, True),
    ("0.0.0.0", True, False, True),
    ("0.0.0.0", True, True, False),
])
def test_serving_beyond_loopback_without_client_auth_warns(
        pki: SimpleNamespace, host: str, tls: bool, client_ca: bool, want_warning: bool,
        caplog: pytest.LogCaptureFixture) -> None:
    certificate = ext.serving_certificate(str(pki.serving[0]), str(pki.serving[1])) \
        if tls else None
    command.warn_if_open(host, certificate, str(pki.ca) if client_ca else None)
    assert ("anyone who can reach the port can ask it" in caplog.text) is want_warning


def test_host_priorities_are_valid_json_for_any_name() -> None:
    names = [("gpu-1", 7), ('odd "name"\\', 0), ("nœud", 10)]
    assert json.loads(ext.encode_host_priorities(names)) == [
        {"Host": h, "Score": s} for h, s in names]
    assert ext.encode_host_priorities([]) == "[]"


def test_cache_is_synced_once_every_watched_kind_is_listed() -> None:
    import gc

    cache = ClusterCache()
    loop = asyncio.new_event_loop()
    try:
        watcher = ext.KubeWatcher(ext.CacheFeeder(cache), loop, api=None, watch_nodes=True)
        watcher._mark_listed("pods")
        assert cache.synced is False
        watcher._mark_listed("nodes")
        assert cache.synced is True
        assert gc.get_freeze_count() > 0  # the listed objects left the collector's view
    finally:
        gc.unfreeze()
        loop.close()


# -- watches against the emulated API server ------------------------------------

def test_watches_feed_the_cache_from_an_api_server(k8s_api: Any) -> None:
    import gc
    import time

    from kubernetes import client

    from tests.emulator import api_client

    k8s_api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}})
    for obj in (node_object("a"), node_object("b"), pod_object("p1", 6, node="a",
                                                                phase="Running")):
        k8s_api.create(obj)
    api = client.CoreV1Api(api_client(k8s_api.url))

    def used(cache: ClusterCache, name: str) -> int:
        node = cache.node(name)
        return -1 if node is None else node.requested.get(GPU, 0) // 1000

    async def until(check: Callable[[], bool]) -> None:
        deadline = time.monotonic() + 10
        while not check():
            assert time.monotonic() < deadline, "the cache did not catch up"
            await asyncio.sleep(0.02)

    async def scenario() -> None:
        cache = ClusterCache()
        watcher = ext.KubeWatcher(ext.CacheFeeder(cache), asyncio.get_running_loop(), api,
                                  watch_nodes=True)
        watcher.start()
        try:
            await until(lambda: cache.synced)
            assert (used(cache, "a"), used(cache, "b")) == (6, 0)
            k8s_api.create(pod_object("p2", 3, node="b", phase="Running"))
            await until(lambda: used(cache, "b") == 3)
            k8s_api.delete("v1", "Pod", "p1", namespace="ml", grace_period=0)  # gone at once
            await until(lambda: used(cache, "a") == 0)
            k8s_api.create(node_object("c", gpus=2))
            await until(lambda: cache.node("c") is not None)
            # the extender answers from what the watches delivered
            extender = make_extender(cache)
            async with TestClient(TestServer(ext.make_app(extender), host="127.0.0.1")) as http:
                resp = await http.post("/filter", json={"Pod": pod_object(gpus=6),
                                                        "NodeNames": ["a", "b", "c"]})
                answer = await resp.json()
            assert answer["NodeNames"] == ["a"]
            assert answer["FailedNodes"] == {"b": "Insufficient nvidia.com/gpu",
                                             "c": "Insufficient nvidia.com/gpu"}
        finally:
            watcher.stop.set()
            gc.unfreeze()

    asyncio.run(scenario())
