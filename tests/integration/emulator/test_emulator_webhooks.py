"""Admission webhooks called by the emulator on CREATE: a fake webhook, then kopf's own."""

from __future__ import annotations

import base64
import http.server
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import kopf
import pytest
from kopf.testing import KopfRunner

from tests.emulator import Emulator
from tests.emulator.clients import call
from tests.emulator.samples import WIDGET_API, widget, widget_crd

JOBS = "/apis/batch/v1/namespaces/default/jobs"
WIDGETS = "/apis/emu.kuota.dev/v1/namespaces/default/widgets"


class FakeWebhook:
    """An HTTP webhook in a thread: records reviews, answers with ``respond(request)``."""

    def __init__(self) -> None:
        self.reviews: list[dict[str, Any]] = []
        self.respond: Any = lambda request: {"allowed": True}
        hook = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                hook.reviews.append(review)
                answer = dict(hook.respond(review["request"]), uid=review["request"]["uid"])
                body = json.dumps({"apiVersion": "admission.k8s.io/v1",
                                   "kind": "AdmissionReview", "response": answer}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/admit"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hook() -> Iterator[FakeWebhook]:
    webhook = FakeWebhook()
    yield webhook
    webhook.close()


def configuration(kind: str, url: str, *, resources: tuple[str, str] = ("batch", "jobs"),
                  **webhook: Any) -> dict[str, Any]:
    group, plural = resources
    return {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": f"test-{kind.lower()}"},
        "webhooks": [{
            "name": "hook.kuota.dev", "clientConfig": {"url": url},
            "rules": [{"apiGroups": [group], "apiVersions": ["*"], "resources": [plural],
                       "operations": ["CREATE"], "scope": "*"}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"], **webhook,
        }],
    }


def job(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": labels},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}


def patch_of(*ops: dict[str, Any]) -> dict[str, Any]:
    return {"allowed": True, "patchType": "JSONPatch",
            "patch": base64.b64encode(json.dumps(list(ops)).encode()).decode()}


class TestMutating:
    def test_the_patch_is_applied_before_storing(self, k8s_api: Emulator,
                                                 hook: FakeWebhook) -> None:
        hook.respond = lambda request: patch_of(
            {"op": "replace", "path": "/spec/suspend", "value": True})
        k8s_api.create(configuration("MutatingWebhookConfiguration", hook.url))
        reply = call(k8s_api.url, "POST", JOBS, dict(job("j"), spec=dict(
            job("j")["spec"], suspend=False)))
        assert reply.status == 201 and reply.data["spec"]["suspend"] is True
        (review,) = hook.reviews
        request = review["request"]
        assert (request["operation"], request["namespace"], request["kind"]["kind"]) == \
            ("CREATE", "default", "Job")
        assert request["object"]["metadata"]["name"] == "j"

    @pytest.mark.parametrize(("webhook", "labels", "want_called"), [
        ({}, {}, True),
        ({"objectSelector": {"matchLabels": {"kuota.dev/queue-name": "q"}}}, {}, False),
        ({"objectSelector": {"matchExpressions": [
            {"key": "kuota.dev/queue-name", "operator": "Exists"}]}},
         {"kuota.dev/queue-name": "q"}, True),
        ({"namespaceSelector": {"matchLabels": {"team": "a"}}}, {}, False),
    ])
    def test_selectors(self, k8s_api: Emulator, hook: FakeWebhook, webhook: dict[str, Any],
                       labels: dict[str, str], want_called: bool) -> None:
        k8s_api.create(configuration("MutatingWebhookConfiguration", hook.url, **webhook))
        assert call(k8s_api.url, "POST", JOBS, job("j", **labels)).status == 201
        assert bool(hook.reviews) is want_called

    def test_other_resources_and_direct_seeding_skip_webhooks(self, k8s_api: Emulator,
                                                             hook: FakeWebhook) -> None:
        k8s_api.create(configuration("MutatingWebhookConfiguration", hook.url))
        call(k8s_api.url, "POST", "/api/v1/namespaces/default/configmaps",
             {"metadata": {"name": "c"}})
        k8s_api.create(dict(job("seeded"), metadata={"name": "seeded", "namespace": "default"}))
        assert hook.reviews == []


class TestValidatingAndFailures:
    def test_a_denial_fails_the_create(self, k8s_api: Emulator, hook: FakeWebhook) -> None:
        hook.respond = lambda request: {"allowed": False,
                                        "status": {"code": 403, "message": "no quota"}}
        k8s_api.create(configuration("ValidatingWebhookConfiguration", hook.url))
        reply = call(k8s_api.url, "POST", JOBS, job("j"))
        assert reply.status == 403
        assert reply.data["message"] == \
            'admission webhook "hook.kuota.dev" denied the request: no quota'
        assert k8s_api.find("batch/v1", "Job", "j", "default") is None

    @pytest.mark.parametrize(("policy", "want_status"), [("Fail", 500), ("Ignore", 201)])
    def test_an_unreachable_webhook(self, k8s_api: Emulator, policy: str,
                                    want_status: int) -> None:
        with socket.socket() as closed:  # a port nobody listens on
            closed.bind(("127.0.0.1", 0))
            port = closed.getsockname()[1]
        k8s_api.create(configuration("MutatingWebhookConfiguration",
                                     f"http://127.0.0.1:{port}/x", failurePolicy=policy))
        reply = call(k8s_api.url, "POST", JOBS, job("j"))
        assert reply.status == want_status
        if want_status == 500:
            assert 'failed calling webhook "hook.kuota.dev"' in reply.data["message"]


class TestKopfWebhooks:
    def test_kopf_manages_and_serves_its_webhooks(self, k8s_api: Emulator) -> None:
        k8s_api.create(widget_crd())
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        registry = kopf.OperatorRegistry()

        @kopf.on.login(registry=registry)
        def login(**_: Any) -> kopf.ConnectionInfo:
            return kopf.ConnectionInfo(server=k8s_api.url)

        @kopf.on.startup(registry=registry)
        def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
            settings.admission.server = kopf.WebhookServer(addr="127.0.0.1", port=port,
                                                           insecure=True)
            settings.admission.managed = "emu.kuota.dev"

        @kopf.on.mutate("batch", "v1", "jobs", registry=registry,
                        labels={"kuota.dev/queue-name": kopf.PRESENT})
        def suspend(patch: kopf.Patch, **_: Any) -> None:
            patch.spec["suspend"] = True

        @kopf.on.validate("emu.kuota.dev", "v1", "widgets", registry=registry)
        def small(spec: kopf.Spec, **_: Any) -> None:
            if spec.get("size", 0) > 10:
                raise kopf.AdmissionError("too big", code=422)

        def configured(kind: str) -> bool:  # kopf creates it empty, then fills in its webhooks
            found = k8s_api.find("admissionregistration.k8s.io/v1", kind, "emu.kuota.dev")
            return bool(found and found.get("webhooks"))

        with KopfRunner(["run", "-A", "--standalone"], registry=registry, timeout=30) as runner:
            for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
                k8s_api.wait_for(lambda kind=kind: configured(kind), what=f"kopf's {kind}")
            queued = call(k8s_api.url, "POST", JOBS, job("queued", **{"kuota.dev/queue-name": "q"}))
            plain = call(k8s_api.url, "POST", JOBS, job("plain"))
            big = call(k8s_api.url, "POST", WIDGETS, widget("big", size=11))
            fine = call(k8s_api.url, "POST", WIDGETS, widget("fine", size=1))
        assert runner.exit_code == 0, runner.output
        assert queued.data["spec"]["suspend"] is True
        assert plain.data["spec"]["suspend"] is False
        assert big.status == 422 and "too big" in big.data["message"]
        assert fine.status == 201
        assert k8s_api.find(WIDGET_API, "Widget", "big", "default") is None
