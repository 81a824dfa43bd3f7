"""The operator's API client against a failing server: what it repeats, what it gives up on.

Each test runs one request (or a few) through :class:`kuota.operator.client.Client`
against the emulator with injected faults, and checks what the caller sees,
how many requests reached the server and what was written.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import kmock
import kopf
import pytest

from kuota.operator.client import ApiError, Client
from kuota.operator.names import Res
from kuota.operator.retries import RetryPolicy
from tests.emulator import Emulator
from tests.emulator.faults import ALL_VERBS, RESET

T = TypeVar("T")
CONFIGMAPS = Res("", "v1", "configmaps", "ConfigMap", True)
CM_REQUESTS = kmock.resource("", "v1", "configmaps")
#: Short pauses: the tests are about which requests are repeated, not about waiting.
FAST = RetryPolicy(attempts=5, pause=0.01, max_pause=0.05, budget=5.0)


def configmap(name: str = "", **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {**({"name": name} if name else {}), **meta}, "data": {"k": "v"}}


def run(api: Emulator, use: Callable[[Client], Awaitable[T]], *,
        retry: RetryPolicy = FAST, token: str | None = None,
        login: Callable[[], kopf.ConnectionInfo | None] | None = None,
        retries: list[str] | None = None) -> T:
    """Run ``use(client)`` with a fresh client of ``api`` in a fresh event loop."""
    async def main() -> T:
        client = Client(kopf.ConnectionInfo(server=api.url, token=token), retry=retry,
                        login=login, on_retry=retries.append if retries is not None else None,
                        rng=random.Random(1))
        try:
            return await use(client)
        finally:
            await client.close()

    return asyncio.run(main())


def sent(api: Emulator, verb: str) -> int:
    return len(api.handler[verb, CM_REQUESTS])


class TestRepeated:
    @pytest.mark.parametrize(("status", "retry_after", "want_reasons"), [
        (429, None, ["429", "429"]),
        (500, None, ["500", "500"]),
        (502, None, ["502", "502"]),
        (503, None, ["503", "503"]),
        (504, None, ["504", "504"]),
        (503, 0, ["503", "503"]),
        (RESET, None, ["NoAnswer", "NoAnswer"]),
    ])
    def test_transient_failures_are_repeated_until_the_write_lands(
            self, k8s_api: Emulator, status: int, retry_after: int | None,
            want_reasons: list[str]) -> None:
        k8s_api.create(configmap("a", namespace="default"))
        fault = k8s_api.faults.fail(status=status, times=2, verbs={"patch"},
                                    retry_after=retry_after)
        retries: list[str] = []
        stored = run(k8s_api, lambda c: c.patch(CONFIGMAPS, "a", {"data": {"n": "1"}},
                                                "default"), retries=retries)
        assert stored["data"] == {"k": "v", "n": "1"}
        assert fault.hits == 2 and sent(k8s_api, "patch") == 3
        assert retries == want_reasons

    def test_retry_after_is_waited_for(self, k8s_api: Emulator) -> None:
        k8s_api.faults.fail(status=429, times=1, verbs={"get"}, retry_after=1)
        k8s_api.create(configmap("a", namespace="default"))
        started = time.monotonic()
        run(k8s_api, lambda c: c.get(CONFIGMAPS, "a", "default"))
        assert time.monotonic() - started >= 1.0

    def test_a_server_that_comes_back_is_reached(self, k8s_api: Emulator) -> None:
        k8s_api.stop()
        timer = threading.Timer(0.3, k8s_api.start)
        timer.start()
        retry = RetryPolicy(attempts=20, pause=0.05, max_pause=0.2, budget=10.0)
        try:
            # Refused connections prove nothing was sent: even a nameless create is repeated.
            created = run(k8s_api, lambda c: c.create(CONFIGMAPS,
                                                      configmap(generateName="x-"), "default"),
                          retry=retry)
        finally:
            timer.join()
        assert created["metadata"]["name"].startswith("x-")
        assert len(k8s_api.list("v1", "ConfigMap", "default")) == 1


class TestGivenUp:
    @pytest.mark.parametrize(("status", "verb", "want_sent"), [
        (400, "patch", 1),
        (403, "patch", 1),
        (404, "get", 1),
        (409, "patch", 1),
        (422, "patch", 1),
    ])
    def test_answers_about_the_request_itself_are_not_repeated(
            self, k8s_api: Emulator, status: int, verb: str, want_sent: int) -> None:
        k8s_api.create(configmap("a", namespace="default"))
        k8s_api.faults.fail(status=status, times=3, verbs={verb})
        retries: list[str] = []
        with pytest.raises(ApiError) as raised:
            if verb == "get":
                run(k8s_api, lambda c: c.get(CONFIGMAPS, "a", "default"), retries=retries)
            else:
                run(k8s_api, lambda c: c.patch(CONFIGMAPS, "a", {"data": {}}, "default"),
                    retries=retries)
        assert raised.value.status == status and raised.value.attempts == 1
        assert sent(k8s_api, verb) == want_sent and retries == []

    def test_a_lasting_failure_is_raised_after_the_last_attempt(self,
                                                                k8s_api: Emulator) -> None:
        k8s_api.faults.fail(status=503, times=None, verbs=ALL_VERBS)
        retry = RetryPolicy(attempts=3, pause=0.01, max_pause=0.01, budget=5.0)
        with pytest.raises(ApiError) as raised:
            run(k8s_api, lambda c: c.get(CONFIGMAPS, "a", "default"), retry=retry)
        error = raised.value
        assert error.status == 503 and error.transient and error.attempts == 3
        assert "gave up after 3 attempts" in str(error)
        assert sent(k8s_api, "get") == 3

    def test_a_retry_after_beyond_the_budget_is_not_waited_for(self,
                                                               k8s_api: Emulator) -> None:
        k8s_api.faults.fail(status=429, times=None, verbs={"get"}, retry_after=30)
        started = time.monotonic()
        with pytest.raises(ApiError) as raised:
            run(k8s_api, lambda c: c.get(CONFIGMAPS, "a", "default"),
                retry=RetryPolicy(attempts=5, budget=2.0))
        assert time.monotonic() - started < 2.0
        assert raised.value.status == 429 and raised.value.retry_after == 30
        assert sent(k8s_api, "get") == 1

    def test_the_budget_bounds_the_time_spent(self, k8s_api: Emulator) -> None:
        k8s_api.faults.fail(status=503, times=None, verbs={"get"})
        retry = RetryPolicy(attempts=100, pause=0.1, max_pause=0.2, budget=1.0)
        started = time.monotonic()
        with pytest.raises(ApiError):
            run(k8s_api, lambda c: c.get(CONFIGMAPS, "a", "default"), retry=retry)
        assert time.monotonic() - started < 1.5


class TestCreates:
    @pytest.mark.parametrize(("name", "status", "after", "want_status", "want_objects"), [
        # Named: a repeat of a create that landed answers AlreadyExists, left to the caller.
        ("a", 503, True, 409, 1),
        ("a", RESET, True, 409, 1),
        ("a", 503, False, None, 1),
        # Nameless (generateName): repeated only when the answer proves nothing was written.
        ("", 503, True, 503, 1),
        ("", RESET, True, 0, 1),
        ("", RESET, False, 0, 0),
        ("", 503, False, 503, 0),
        ("", 429, False, None, 1),
    ])
    def test_a_create_is_never_written_twice(self, k8s_api: Emulator, name: str, status: int,
                                             after: bool, want_status: int | None,
                                             want_objects: int) -> None:
        k8s_api.faults.fail(status=status, times=1, verbs={"create"}, after=after)
        body = configmap(name) if name else configmap(generateName="x-")
        got: int | None = None
        try:
            run(k8s_api, lambda c: c.create(CONFIGMAPS, body, "default"))
        except ApiError as exc:
            got = exc.status
            assert exc.reason != "AlreadyExists" or name  # only a named create can collide
        assert got == want_status
        assert len(k8s_api.list("v1", "ConfigMap", "default")) == want_objects


class TestCredentials:
    def test_a_401_logs_in_again_and_repeats_with_the_new_token(self,
                                                                 k8s_api: Emulator) -> None:
        k8s_api.create(configmap("a", namespace="default"))
        k8s_api.faults.fail(status=401, times=1, verbs={"get"})
        logins: list[str] = []

        def login() -> kopf.ConnectionInfo:
            logins.append("new")
            return kopf.ConnectionInfo(server=k8s_api.url, token="new")

        run(k8s_api, lambda c: c.get(CONFIGMAPS, "a", "default"), token="old", login=login)
        tokens = [r.headers.get("Authorization") for r in k8s_api.handler["get", CM_REQUESTS]]
        assert tokens == ["Bearer old", "Bearer new"] and logins == ["new"]

    @pytest.mark.parametrize(("new_token", "failures", "want_sent", "want_logins"), [
        ("old", 1, 1, 1),      # the same token again: nothing to repeat with
        ("new", 2, 2, 1),      # refused with the new token too: not about staleness
        (None, 1, 1, 1),       # no credentials at all
    ])
    def test_a_401_that_a_new_login_cannot_fix_is_raised(
            self, k8s_api: Emulator, new_token: str | None, failures: int, want_sent: int,
            want_logins: int) -> None:
        k8s_api.faults.fail(status=401, times=failures, verbs={"get"})
        logins: list[str | None] = []

        def login() -> kopf.ConnectionInfo | None:
            logins.append(new_token)
            return kopf.ConnectionInfo(server=k8s_api.url, token=new_token) \
                if new_token else None

        with pytest.raises(ApiError) as raised:
            run(k8s_api, lambda c: c.get(CONFIGMAPS, "a", "default"), token="old",
                login=login)
        assert raised.value.status == 401 and raised.value.transient
        assert sent(k8s_api, "get") == want_sent and len(logins) == want_logins

    def test_requests_refused_together_log_in_once(self, k8s_api: Emulator) -> None:
        k8s_api.create(configmap("a", namespace="default"))
        k8s_api.faults.fail(status=401, times=5, verbs={"get"})
        logins: list[int] = []

        def login() -> kopf.ConnectionInfo:
            logins.append(1)
            time.sleep(0.05)  # the others are refused meanwhile
            return kopf.ConnectionInfo(server=k8s_api.url, token=f"t{len(logins)}")

        async def five(client: Client) -> list[Any]:
            return await asyncio.gather(*(client.get(CONFIGMAPS, "a", "default")
                                          for _ in range(5)))

        answers = run(k8s_api, five, token="t0", login=login)
        assert len(answers) == 5 and logins == [1]

    def test_expired_credentials_are_renewed_before_the_request(self,
                                                                k8s_api: Emulator) -> None:
        import datetime

        k8s_api.create(configmap("a", namespace="default"))
        past = datetime.datetime.now(tz=datetime.UTC) - datetime.timedelta(seconds=1)

        async def use(client: Client) -> None:
            client.credentials.expires = past.timestamp()
            await client.get(CONFIGMAPS, "a", "default")

        run(k8s_api, use, token="old",
            login=lambda: kopf.ConnectionInfo(server=k8s_api.url, token="fresh"))
        tokens = [r.headers.get("Authorization") for r in k8s_api.handler["get", CM_REQUESTS]]
        assert tokens == ["Bearer fresh"]


class TestWatch:
    def test_a_refused_watch_carries_the_servers_retry_after(self, k8s_api: Emulator) -> None:
        k8s_api.faults.fail(status=429, times=1, verbs={"watch"}, retry_after=2)

        async def watch(client: Client) -> None:
            async for _ in client.watch(CONFIGMAPS, "0", "default"):
                break

        with pytest.raises(ApiError) as raised:
            run(k8s_api, watch)
        assert raised.value.status == 429 and raised.value.retry_after == 2

    def test_a_401_on_a_watch_logs_in_for_the_next_one(self, k8s_api: Emulator) -> None:
        k8s_api.faults.fail(status=401, times=1, verbs={"watch"})
        k8s_api.create(configmap("a", namespace="default"))

        async def watch_twice(client: Client) -> dict[str, Any]:
            with pytest.raises(ApiError):
                async for _ in client.watch(CONFIGMAPS, "0", "default"):
                    pass
            async for event in client.watch(CONFIGMAPS, "0", "default"):
                return dict(event)
            raise AssertionError("the watch ended without an event")

        event = run(k8s_api, watch_twice, token="old",
                    login=lambda: kopf.ConnectionInfo(server=k8s_api.url, token="new"))
        assert event["type"] == "ADDED"
        tokens = [r.headers.get("Authorization")
                  for r in k8s_api.handler["watch", CM_REQUESTS]]
        assert tokens == ["Bearer old", "Bearer new"]
