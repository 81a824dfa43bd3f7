"""The scheduler extender under hostile requests, as ``kuota extender`` runs in a process.

Why a process: the limits live partly in how the command serves the app
(aiohttp's keep-alive timer closes a connection whose request has not
arrived, lingering drains a refused body), and memory is only honest measured
on the process that serves (``VmHWM`` in ``/proc/<pid>/status``). Its watches
read nodes and pods from an emulated API server, so names in ``NodeNames``
resolve to cached nodes and the fit and score code runs on what the fuzz sends.

What is checked (issue 42, finding 5): every malformed body — deep nesting,
bad UTF-8, a wrong type or a missing field anywhere, huge numbers, a
``Content-Encoding``, JSON that is not an object, bytes that are not JSON —
gets a 4xx, never a 5xx; 50 MiB bodies are refused without the process
growing past 200 MB; a client that stops half way through its headers or its
body loses the connection after the timeout instead of holding it.
"""

from __future__ import annotations

import copy
import gzip
import http.client
import json
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.emulator import Emulator
from tests.emulator.clients import write_kubeconfig
from tests.integration.test_extender import node_object, pod_object
from tests.ports import free_port

REPO = Path(__file__).resolve().parents[2]
MiB = 1024 * 1024
#: The brief of issue 42: peak RSS of the extender under 50 MiB bodies.
RSS_LIMIT_KB = 200 * 1024


# -- the process ------------------------------------------------------------------

@dataclass
class ExtenderProcess:
    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    def post(self, path: str, body: bytes, headers: dict[str, str] | None = None,
             ) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request("POST", path, body=body,
                         headers={"Content-Type": "application/json", **(headers or {})})
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def status(self, key: str) -> int:
        """A ``/proc/<pid>/status`` field in kB (VmHWM: the peak resident set)."""
        text = Path(f"/proc/{self.proc.pid}/status").read_text()
        match = re.search(rf"^{key}:\s+(\d+) kB", text, re.MULTILINE)
        assert match, text
        return int(match.group(1))

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=5) as r:
                return bool(r.status == 200)
        except OSError:
            return False


def start_extender(kubeconfig: Path, log: Path, *flags: str) -> ExtenderProcess:
    port = free_port()
    out = log.open("ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "kuota.cli", "extender", "--listen", f"127.0.0.1:{port}",
         "--node-cache", "--kubeconfig", str(kubeconfig), *flags],
        cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    out.close()  # the child has its own descriptor
    process = ExtenderProcess(proc, port, log)
    deadline = time.monotonic() + 30
    while True:  # ready: the watches listed the emulator's nodes and pods
        assert proc.poll() is None, log.read_text()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                if r.status == 200:
                    return process
        except OSError:
            pass  # not listening, or 503 until the watches have listed
        assert time.monotonic() < deadline, "the extender did not become ready"
        time.sleep(0.1)


def stop(process: ExtenderProcess) -> None:
    alive = process.proc.poll() is None
    process.proc.terminate()
    process.proc.wait(15)
    assert alive, f"the extender died:\n{process.log.read_text()[-3000:]}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A kubeconfig for an emulated API server holding nodes a and b and a pod on a."""
    with Emulator() as api:
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}})
        for obj in (node_object("a"), node_object("b", rack="r2"),
                    pod_object("p1", 6, node="a", phase="Running",
                               labels={"kuota.dev/pod-group": "g"})):
            api.create(obj)
        yield write_kubeconfig(api.url, tmp_path_factory.mktemp("extender") / "kubeconfig")


@pytest.fixture(scope="module")
def strict(cluster: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ExtenderProcess]:
    """An extender with one-second header and read timeouts."""
    process = start_extender(cluster, tmp_path_factory.mktemp("strict") / "extender.log",
                             "--header-timeout", "1", "--read-timeout", "1")
    yield process
    stop(process)


# -- the fuzz ---------------------------------------------------------------------

GANG = {"kuota.dev/pod-group": "g"}
VALID = [
    {"Pod": pod_object("w-1", labels=GANG), "Nodes": None, "NodeNames": ["a", "b", "ghost"]},
    {"Pod": pod_object("w-2"), "Nodes": {"apiVersion": "v1", "kind": "NodeList",
                                         "metadata": {"resourceVersion": "3"},
                                         "items": [node_object("a"), node_object("c", rack="r3")]},
     "NodeNames": None},
]
PATHS = ["/filter", "/prioritize"]

FieldPath = tuple[Any, ...]


def paths(value: Any, prefix: FieldPath = ()) -> Iterator[FieldPath]:
    """Every field and list element of a JSON value, parents before children."""
    children: Any = (value.items() if isinstance(value, dict) else
                     enumerate(value) if isinstance(value, list) else ())
    for key, child in children:
        yield (*prefix, key)
        yield from paths(child, (*prefix, key))


def replaced(body: Any, path: FieldPath, value: Any) -> Any:
    out = copy.deepcopy(body)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


def deleted(body: Any, path: FieldPath) -> Any:
    out = copy.deepcopy(body)
    target = out
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return out


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=8)
#: Number texts no JSON encoder writes but a decoder must survive.
HUGE_NUMBERS = ["1" * 5000, "-" + "9" * 4301, "1e999", "-1e999", "1e-999", "9" * 400 + ".5",
                "123456789012345678901234567890", "0." + "0" * 5000 + "1"]
#: A placeholder string where raw text is put into the encoded body.
HOLE = "\u0000hole\u0000"
HOLE_TEXT = json.dumps(HOLE)


def with_raw(body: Any, path: FieldPath, text: str) -> bytes:
    return json.dumps(replaced(body, path, HOLE)).replace(HOLE_TEXT, text, 1).encode()


@st.composite
def somewhere(draw: st.DrawFn) -> tuple[Any, FieldPath]:
    body = draw(st.sampled_from(VALID))
    return body, draw(st.sampled_from(list(paths(body))))


@st.composite
def wrong_types(draw: st.DrawFn) -> bytes:
    body, path = draw(somewhere())
    return json.dumps(replaced(body, path, draw(JSON_VALUES))).encode()


@st.composite
def missing_fields(draw: st.DrawFn) -> bytes:
    body, path = draw(somewhere())
    return json.dumps(deleted(body, path)).encode()


@st.composite
def huge_numbers(draw: st.DrawFn) -> bytes:
    body, path = draw(somewhere())
    return with_raw(body, path, draw(st.sampled_from(HUGE_NUMBERS)))


def nested(depth: int, opener: str) -> str:
    closer = {"[": "]", '{"a":': "}"}[opener]
    return opener * depth + "1" + closer * depth


@st.composite
def deep_nesting(draw: st.DrawFn) -> bytes:
    body, path = draw(somewhere())
    depth = draw(st.integers(900, 1100) | st.sampled_from([2000, 100_000]))
    return with_raw(body, path, nested(depth, draw(st.sampled_from(["[", '{"a":']))))


@st.composite
def bad_utf8(draw: st.DrawFn) -> bytes:
    raw = json.dumps(draw(st.sampled_from(VALID))).encode()
    where = draw(st.integers(0, len(raw)))
    junk = draw(st.binary(min_size=1, max_size=4).filter(not_utf8))
    return raw[:where] + junk + raw[where:]


def not_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


NOT_OBJECTS = JSON_VALUES.filter(lambda v: not isinstance(v, dict)).map(
    lambda v: json.dumps(v).encode())
MALFORMED: dict[str, st.SearchStrategy[bytes]] = {
    "bad UTF-8": bad_utf8(),
    "JSON that is not an object": NOT_OBJECTS,
    "bytes that are not JSON": st.binary(max_size=64).filter(lambda b: not is_json(b)),
}
MAYBE_VALID: dict[str, st.SearchStrategy[bytes]] = {
    "a wrong type at any field": wrong_types(),
    "a missing field": missing_fields(),
    "a huge number at any field": huge_numbers(),
    "deep nesting at any field": deep_nesting(),
}


def is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def check_answer(status: int, answer: bytes, allowed: set[int]) -> None:
    assert status in allowed, (status, answer[:300])
    if status == 400:
        error = json.loads(answer)
        assert list(error) == ["Error"] and error["Error"], error


@pytest.mark.parametrize("category", list(MALFORMED))
def test_malformed_bodies_get_400(strict: ExtenderProcess, category: str) -> None:
    @FUZZ
    @given(body=MALFORMED[category], path=st.sampled_from(PATHS))
    def fuzz(body: bytes, path: str) -> None:
        check_answer(*strict.post(path, body), {400})
    fuzz()
    assert strict.healthy()


@pytest.mark.parametrize("category", list(MAYBE_VALID))
def test_any_field_broken_gets_200_or_400_never_5xx(strict: ExtenderProcess,
                                                     category: str) -> None:
    """A changed field may still be valid (an unread one), so 200 is allowed too; both
    answers are seen, so the fuzz reaches the fit and score code behind the parser."""
    seen: set[int] = set()

    @FUZZ
    @given(body=MAYBE_VALID[category], path=st.sampled_from(PATHS))
    def fuzz(body: bytes, path: str) -> None:
        status, answer = strict.post(path, body)
        seen.add(status)
        check_answer(status, answer, {200, 400})
    fuzz()
    assert seen == {200, 400}
    assert strict.healthy()


@pytest.mark.parametrize("opener", ["[", '{"a":'])
@pytest.mark.parametrize("where", [(), ("Pod", "spec"), ("Nodes", "items", 0, "apiVersion")])
def test_nesting_past_the_decoders_depth_is_400(strict: ExtenderProcess, opener: str,
                                                where: FieldPath) -> None:
    raw = nested(100_000, opener)
    body = raw.encode() if not where else with_raw(VALID[1], where, raw)
    for path in PATHS:
        status, answer = strict.post(path, body)
        assert (status, json.loads(answer)["Error"]) == (
            400, "request body is not JSON: nested too deeply")


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "zstd", "x-unknown", "GZIP",
                                      "gzip, identity"])
@pytest.mark.parametrize("compressed", [True, False], ids=["compressed", "plain"])
def test_a_content_encoding_is_400(strict: ExtenderProcess, encoding: str,
                                   compressed: bool) -> None:
    body = json.dumps(VALID[0]).encode()
    status, answer = strict.post("/filter", gzip.compress(body) if compressed else body,
                                 {"Content-Encoding": encoding})
    assert status == 400
    assert "is not supported: send plain JSON" in json.loads(answer)["Error"]


def test_identity_encoding_and_valid_bodies_are_served(strict: ExtenderProcess) -> None:
    status, answer = strict.post("/filter", json.dumps(VALID[0]).encode(),
                                 {"Content-Encoding": "identity"})
    assert status == 200
    # a has 2 of 8 GPUs free, b 8: both fit one; ghost is not in the cache
    assert json.loads(answer)["NodeNames"] == ["a", "b"]


def test_wrong_types_in_the_fields_read_before_parsing_are_named(strict: ExtenderProcess) -> None:
    cases = {
        ("Pod", "spec", "schedulerName"): (["x"], "ExtenderArgs.Pod.spec.schedulerName must be "
                                                  "a string, not list"),
        ("Pod", "metadata", "labels"): ("x", "ExtenderArgs.Pod.metadata.labels must be an "
                                             "object, not str"),
        ("Pod", "metadata", "namespace"): ({"a": 1}, "ExtenderArgs.Pod.metadata.namespace "
                                                     "must be a string, not dict"),
        ("Pod", "spec"): ([1], "ExtenderArgs.Pod.spec must be an object, not list"),
    }
    for where, (value, error) in cases.items():
        status, answer = strict.post("/prioritize",
                                     json.dumps(replaced(VALID[0], where, value)).encode())
        assert (status, json.loads(answer)) == (400, {"Error": error})


def test_more_nodes_than_any_cluster_has_are_refused(strict: ExtenderProcess) -> None:
    from kuota.extender import MAX_NODES

    body = {"Pod": pod_object(), "NodeNames": ["n"] * (MAX_NODES + 1)}
    status, answer = strict.post("/prioritize", json.dumps(body).encode())
    assert (status, json.loads(answer)["Error"]) == (
        400, f"ExtenderArgs.NodeNames: {MAX_NODES + 1} nodes, more than {MAX_NODES}")


# -- timeouts ---------------------------------------------------------------------

def closed_after(sock: socket.socket, limit: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and when it did."""
    sock.settimeout(limit)
    started, received = time.monotonic(), b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except TimeoutError:
        pytest.fail(f"the connection was still open after {limit}s; got {received[:200]!r}")
    except ConnectionResetError:
        pass  # closed with unread data: also closed
    return received, time.monotonic() - started


# The server's timeouts are 1 s; a server without them keeps the connection for
# minutes (aiohttp's keep-alive default) or forever, so 10 s cannot pass by luck.
PATIENCE = 10.0


def test_a_connection_that_sends_nothing_is_closed(strict: ExtenderProcess) -> None:
    with socket.create_connection(("127.0.0.1", strict.port)) as sock:
        received, _ = closed_after(sock, PATIENCE)
    assert received == b""


def test_headers_sent_a_byte_at_a_time_do_not_hold_the_connection(
        strict: ExtenderProcess) -> None:
    """Valid header lines, one byte per 50 ms: the request never completes."""
    lines = b"".join(b"X-Slow-%d: 1\r\n" % i for i in range(100))
    request = b"POST /filter HTTP/1.1\r\nHost: extender\r\n" + lines
    with socket.create_connection(("127.0.0.1", strict.port)) as sock:
        started = time.monotonic()
        with pytest.raises((BrokenPipeError, ConnectionResetError)):
            for byte in request:  # 70 s worth
                assert time.monotonic() - started < PATIENCE, "still open"
                sock.sendall(bytes([byte]))
                time.sleep(0.05)


def test_a_body_that_stops_half_way_gets_408_and_the_connection_is_closed(
        strict: ExtenderProcess) -> None:
    with socket.create_connection(("127.0.0.1", strict.port)) as sock:
        sock.sendall(b"POST /filter HTTP/1.1\r\nHost: extender\r\nContent-Type: "
                     b"application/json\r\nContent-Length: 1000\r\n\r\n{\"Pod\": {")
        received, _ = closed_after(sock, PATIENCE)
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 "), received[:300]
    assert json.loads(body) == {"Error": "request body not received within 1s (--read-timeout)"}
    assert strict.healthy()


# -- size and memory ----------------------------------------------------------------

def test_50_mib_bodies_are_refused_and_memory_stays_bounded(
        cluster: Path, tmp_path: Path) -> None:
    """With the default body bound (4 MiB), 50 MiB bodies in every form, and the bodies under
    the bound that decode to the most memory, leave the peak RSS under 200 MB."""
    process = start_extender(cluster, tmp_path / "extender.log", "--header-timeout", "2",
                             "--read-timeout", "2")
    try:
        before = process.status("VmHWM")
        junk = b"x" * (50 * MiB)
        big_json = json.dumps({"Pod": pod_object(), "NodeNames": ["a" * 60] * (50 * MiB // 64)})
        for path in PATHS:
            for body in (junk, big_json.encode()):
                status, answer = process.post(path, body)  # Content-Length: 50 MiB
                assert status == 413, answer[:200]
                assert json.loads(answer)["Error"].startswith(
                    f"request body of {len(body)} bytes is too large: at most 4194304 bytes")
            status, answer = post_chunked(process.port, path, junk, MiB)
            assert status == 413, answer[:200]
            for body in densest_bodies(4 * MiB):
                status, answer = process.post(path, body)
                assert status in (200, 400, 413), answer[:200]
        peak = process.status("VmHWM")
    finally:
        stop(process)
    print(f"extender VmHWM: {before} kB at start, {peak} kB after the 50 MiB bodies")
    assert peak <= RSS_LIMIT_KB, f"peak RSS {peak} kB"


def densest_bodies(limit: int) -> Iterator[bytes]:
    """Bodies just under ``limit`` whose decoding or answer costs the most per byte."""
    pod = json.dumps(pod_object())

    def fill(unit: str, head: str, tail: str) -> str:
        return head + unit * ((limit - len(head) - len(tail)) // len(unit)) + tail
    yield fill('[],', '{"Pod":' + pod + ',"NodeNames":[', '"a"]}').encode()  # lists
    yield fill('{},', '{"Pod":' + pod + ',"Nodes":{"items":[', '{}]}}').encode()  # objects
    yield fill('"a",', '{"Pod":' + pod + ',"NodeNames":[', '"a"]}').encode()  # names
    yield fill('1.5,', '{"Pod":' + pod + ',"x":[', '1]}').encode()  # floats
    names = ",".join(f'"{i:x}"' for i in range(200_000))
    yield ('{"Pod":' + pod + ',"NodeNames":[' + names[:limit - 100 - len(pod)].rsplit(",", 1)[0]
           + ']}').encode()  # distinct names: an answer entry each


def post_chunked(port: int, path: str, body: bytes, chunk: int) -> tuple[int, bytes]:
    """POST without a Content-Length (the server learns the size only by reading),
    sending until the server answers or closes; then its answer."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: extender\r\nContent-Type: "
                     "application/json\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
        try:
            for i in range(0, len(body), chunk):
                part = body[i:i + chunk]
                sock.sendall(b"%x\r\n%s\r\n" % (len(part), part))
            sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused part way: the answer is already in the socket's buffer
        sock.settimeout(PATIENCE)
        response = http.client.HTTPResponse(sock)
        response.begin()
        return response.status, response.read()
