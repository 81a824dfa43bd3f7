"""Admission webhooks: the emulator calls the webhook configurations written to it.

When an object is created, the emulator does what the real API server's
admission chain does for ``CREATE``:

1. every ``MutatingWebhookConfiguration`` (in name order) whose webhook rules
   match the operation, group, version, resource and scope, and whose
   ``objectSelector`` / ``namespaceSelector`` match, is sent an
   ``admission.k8s.io/v1`` AdmissionReview; an answered ``JSONPatch`` is
   applied to the object before the next webhook sees it;
2. then every matching ``ValidatingWebhookConfiguration`` may only allow or deny.

A denial fails the request with the webhook's code (400 at least) and
``admission webhook "<name>" denied the request: <message>``. A webhook that
cannot be called fails the request with 500, unless its ``failurePolicy`` is
``Ignore``. ``clientConfig.url`` may be ``https`` (verified with
``caBundle``) or, for tests, plain ``http``; ``clientConfig.service`` cannot
be resolved without a cluster network and counts as a failed call.

Only ``CREATE`` is sent to webhooks: that is what kuota's webhook needs (a
Job is suspended and a Pod gated when created). Updates and deletes are
admitted without calling webhooks.
"""

from __future__ import annotations

import base64
import json
import ssl
import uuid
from collections.abc import Mapping
from typing import Any

import aiohttp
import kmock

from . import errors, patches
from .resources import ResourceType
from .selectors import label_selector
from .store import Obj, Store

MUTATING = ("admissionregistration.k8s.io", "mutatingwebhookconfigurations")
VALIDATING = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")


def _configs(store: Store, key: tuple[str, str]) -> list[Obj]:
    rtype = store.registry.find(key[0], key[1])
    return [] if rtype is None else store.list_objects(rtype)[0]


def _rule_matches(rule: Mapping[str, Any], rtype: ResourceType, operation: str) -> bool:
    def has(field: str, value: str) -> bool:
        values = rule.get(field) or []
        return "*" in values or value in values

    scope = rule.get("scope", "*")
    return (has("operations", operation) and has("apiGroups", rtype.group)
            and has("apiVersions", rtype.version)
            and (has("resources", rtype.plural) or "*/*" in (rule.get("resources") or []))
            and (scope == "*" or scope == ("Namespaced" if rtype.namespaced else "Cluster")))


def _selected(webhook: Mapping[str, Any], store: Store, rtype: ResourceType,
              namespace: str | None, obj: Obj) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if not label_selector(webhook.get("objectSelector"))(labels):
        return False
    if rtype.key == ("", "namespaces"):
        return label_selector(webhook.get("namespaceSelector"))(labels)
    if namespace is None:
        return True
    namespaces = store.registry.get("", "v1", "namespaces")
    assert namespaces is not None
    try:
        ns_labels = store.get(namespaces, None, namespace)["metadata"].get("labels") or {}
    except kmock.KubernetesError:
        ns_labels = {}
    return label_selector(webhook.get("namespaceSelector"))(ns_labels)


def _review(rtype: ResourceType, namespace: str | None, obj: Obj,
            operation: str) -> dict[str, Any]:
    gvk = {"group": rtype.group, "version": rtype.version, "kind": rtype.kind}
    gvr = {"group": rtype.group, "version": rtype.version, "resource": rtype.plural}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
            "name": (obj.get("metadata") or {}).get("name", ""),
            "namespace": namespace or "",
            "operation": operation,
            "userInfo": {"username": "system:admin", "groups": ["system:masters"]},
            "object": obj,
            "oldObject": None,
            "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }


async def _call(webhook: Mapping[str, Any], review: dict[str, Any]) -> dict[str, Any]:
    """POST the review to the webhook; the answered ``response``, or an exception."""
    config = webhook.get("clientConfig") or {}
    url = config.get("url")
    if not url:
        raise ValueError("clientConfig.service is not supported by the emulator: use url")
    context: ssl.SSLContext | bool = False
    if url.startswith("https:"):
        bundle = config.get("caBundle")
        context = ssl.create_default_context(
            cadata=base64.b64decode(bundle).decode() if bundle else None)
    timeout = aiohttp.ClientTimeout(total=float(webhook.get("timeoutSeconds") or 10))
    async with aiohttp.ClientSession(timeout=timeout) as session, \
            session.post(url, json=review, ssl=context) as answer:
        if answer.status != 200:
            raise ValueError(f"the webhook answered HTTP {answer.status}")
        data = await answer.json(content_type=None)
    response = (data or {}).get("response")
    if not isinstance(response, dict) or response.get("uid") != review["request"]["uid"]:
        raise ValueError("the webhook's AdmissionReview has no response with the request's uid")
    return response


async def admit(store: Store, rtype: ResourceType, namespace: str | None, obj: Obj, *,
                operation: str = "CREATE") -> Obj:
    """Run the mutating, then the validating webhooks over a new object."""
    for key, mutating in ((MUTATING, True), (VALIDATING, False)):
        for config in sorted(_configs(store, key), key=lambda c: c["metadata"]["name"]):
            for webhook in config.get("webhooks") or []:
                if not any(_rule_matches(rule, rtype, operation)
                           for rule in webhook.get("rules") or []):
                    continue
                if not _selected(webhook, store, rtype, namespace, obj):
                    continue
                obj = await _admit_one(webhook, rtype, namespace, obj, operation, mutating)
    return obj


async def _admit_one(webhook: Mapping[str, Any], rtype: ResourceType, namespace: str | None,
                     obj: Obj, operation: str, mutating: bool) -> Obj:
    name = webhook.get("name", "<unnamed>")
    try:
        response = await _call(webhook, _review(rtype, namespace, obj, operation))
    except (TimeoutError, aiohttp.ClientError, ValueError, ssl.SSLError) as exc:
        if webhook.get("failurePolicy", "Fail") == "Ignore":
            return obj
        raise errors.api_error(500, "InternalError", f'Internal error occurred: failed calling '
                               f'webhook "{name}": {exc}') from exc
    if not response.get("allowed"):
        status = response.get("status") or {}
        code = max(int(status.get("code") or 400), 400)
        message = status.get("message") or status.get("reason") or "without explanation"
        raise errors.api_error(code, status.get("reason") or "BadRequest",
                               f'admission webhook "{name}" denied the request: {message}')
    if mutating and response.get("patch"):
        if response.get("patchType", "JSONPatch") != "JSONPatch":
            raise errors.api_error(500, "InternalError", f'webhook "{name}" answered an '
                                   f'unsupported patchType {response.get("patchType")!r}')
        try:
            obj = patches.json_patch(obj, json.loads(base64.b64decode(response["patch"])))
        except (ValueError, patches.PatchError) as exc:
            raise errors.api_error(500, "InternalError", f'webhook "{name}" answered a patch '
                                   f"that does not apply: {exc}") from exc
    return obj
