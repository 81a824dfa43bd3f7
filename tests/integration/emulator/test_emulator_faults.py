"""Injected faults of an overloaded or flaky server: rates, Retry-After, resets, lost answers.

(The basic "next N requests fail" rules are covered with the writes, in
test_emulator_writes.py.)
"""

from __future__ import annotations

import http.client
from typing import Any

import pytest

from tests.emulator import Emulator
from tests.emulator.clients import call
from tests.emulator.faults import ALL_VERBS, RESET, Faults

CM_PATH = "/api/v1/namespaces/default/configmaps"


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"k": "v"}}


def raw_post(url: str, path: str, body: bytes) -> int | str:
    """POST with http.client: the status, or the name of the error when no answer came."""
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        connection.request("POST", path, body=body,
                           headers={"Content-Type": "application/json"})
        return connection.getresponse().status
    except (ConnectionError, http.client.HTTPException) as exc:
        return type(exc).__name__
    finally:
        connection.close()


class TestRates:
    @pytest.mark.parametrize(("rate", "want_low", "want_high"), [
        (0.25, 30, 70),    # 200 draws: 50 expected
        (0.5, 75, 125),
        (1.0, 200, 200),
    ])
    def test_a_fraction_of_the_matching_requests_fail(self, k8s_api: Emulator, rate: float,
                                                      want_low: int, want_high: int) -> None:
        fault = k8s_api.faults.fail(status=503, times=None, rate=rate, verbs={"list"})
        failed = sum(call(k8s_api.url, "GET", CM_PATH).status == 503 for _ in range(200))
        assert want_low <= failed <= want_high
        assert fault.hits == failed

    def test_the_draws_repeat_with_the_same_seed(self) -> None:
        def outcomes() -> list[bool]:
            faults = Faults(seed=7)
            faults.fail(status=429, times=None, rate=0.3, verbs=ALL_VERBS)
            return [faults.take("get", "", "pods", "ns", "p", None) is not None
                    for _ in range(50)]

        assert outcomes() == outcomes()

    def test_a_removed_rule_stops_failing(self, k8s_api: Emulator) -> None:
        fault = k8s_api.faults.fail(status=503, times=None, verbs={"list"})
        assert call(k8s_api.url, "GET", CM_PATH).status == 503
        k8s_api.faults.remove(fault)
        assert call(k8s_api.url, "GET", CM_PATH).status == 200

    @pytest.mark.parametrize(("options", "want_error"), [
        ({"rate": 0.0}, "rate"),
        ({"rate": 1.5}, "rate"),
        ({"times": 0}, "times"),
        ({"status": 200}, "status"),
        ({"after": True, "verbs": {"watch"}}, "watch"),
    ])
    def test_invalid_rules_are_refused(self, options: dict[str, Any], want_error: str) -> None:
        with pytest.raises(ValueError, match=want_error):
            Faults().fail(**options)


class TestAnswers:
    @pytest.mark.parametrize(("status", "retry_after", "want_reason", "want_header"), [
        (429, 3, "TooManyRequests", "3"),
        (503, 1, "ServiceUnavailable", "1"),
        (503, None, "ServiceUnavailable", None),
        (502, None, "BadGateway", None),
    ])
    def test_throttling_answers_carry_retry_after(self, k8s_api: Emulator, status: int,
                                                  retry_after: int | None, want_reason: str,
                                                  want_header: str | None) -> None:
        k8s_api.faults.fail(status=status, retry_after=retry_after, verbs={"list"})
        reply = call(k8s_api.url, "GET", CM_PATH)
        assert reply.status == status and reply.data["reason"] == want_reason
        assert reply.headers.get("Retry-After") == want_header
        assert reply.data["details"].get("retryAfterSeconds") == retry_after

    def test_a_reset_answers_nothing_and_writes_nothing(self, k8s_api: Emulator) -> None:
        fault = k8s_api.faults.fail(status=RESET, verbs={"create"})
        got = raw_post(k8s_api.url, CM_PATH, b'{"metadata": {"name": "a"}}')
        assert got in ("RemoteDisconnected", "ConnectionResetError", "BadStatusLine")
        assert fault.hits == 1 and k8s_api.find("v1", "ConfigMap", "a", "default") is None
        assert call(k8s_api.url, "POST", CM_PATH, configmap("a")).status == 201


class TestLostAnswers:
    @pytest.mark.parametrize(("status", "want"), [
        (503, 503),
        (RESET, "no answer"),
    ])
    def test_the_write_lands_but_its_answer_is_lost(self, k8s_api: Emulator, status: int,
                                                    want: int | str) -> None:
        fault = k8s_api.faults.fail(status=status, verbs={"create"}, after=True)
        got = raw_post(k8s_api.url, CM_PATH,
                       b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}')
        assert (got if isinstance(got, int) else "no answer") == want
        assert fault.hits == 1
        assert k8s_api.find("v1", "ConfigMap", "a", "default") is not None
        again = call(k8s_api.url, "POST", CM_PATH, configmap("a"))
        assert again.status == 409 and again.data["reason"] == "AlreadyExists"

    def test_a_failed_request_is_not_counted_as_a_lost_answer(self,
                                                               k8s_api: Emulator) -> None:
        fault = k8s_api.faults.fail(status=503, verbs={"get"}, after=True)
        assert call(k8s_api.url, "GET", f"{CM_PATH}/missing").status == 404
        assert fault.hits == 0 and fault.remaining == 1
