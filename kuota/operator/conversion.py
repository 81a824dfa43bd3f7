"""The CRD conversion webhook of Kueue's group: ``v1beta1`` served, ``v1beta2`` stored.

With ``kuota operator --api kueue`` kuota serves Kueue's ``kueue.x-k8s.io``
CRDs (``manifests/kueue``), in both versions Kueue serves. The API server
stores ``v1beta2``; whenever a client reads or writes ``v1beta1`` (an older
kubectl manifest, a tool built against it) it sends the objects here in a
``ConversionReview`` and stores or returns what comes back. The renames are
those of Kueue's own conversion (:func:`quota.api.kueue.to_kueue`).

The API server calls ``POST /convert`` on the operator's webhook server (the
same HTTPS listener and certificate as the admission webhooks):
:func:`answering_conversions` puts the review in front of kopf's admission
handling. A review that cannot be converted is answered ``Failure`` with the
object and field named, which the API server passes to the client; it never
raises, so a malformed object never stops the server.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from quota.api.kueue import KUEUE_V1BETA1, KUEUE_V1BETA2, to_kueue

Body = dict[str, Any]
#: What kopf's webhook server calls with each request's JSON body.
Handler = Callable[..., Awaitable[Any]]

VERSIONS = (KUEUE_V1BETA1, KUEUE_V1BETA2)


def review(body: Mapping[str, Any]) -> Body:
    """The answer to one ``ConversionReview`` (``apiextensions.k8s.io/v1``)."""
    request = body.get("request")
    if not isinstance(request, Mapping):
        return _answer(body, "", failure="request: missing")
    uid = str(request.get("uid") or "")
    desired = request.get("desiredAPIVersion")
    if desired not in VERSIONS:
        return _answer(body, uid, failure=f"desiredAPIVersion {desired!r}: kuota converts "
                                          f"only to {' or '.join(VERSIONS)}")
    converted: list[Body] = []
    for obj in request.get("objects") or ():
        failure = _problem(obj)
        if failure:
            return _answer(body, uid, failure=failure)
        try:
            out, problems = to_kueue(obj, str(desired))
        except ValueError as exc:  # a topology assignment that does not parse
            return _answer(body, uid, failure=f"{_name(obj)}: {exc}")
        if problems:
            return _answer(body, uid, failure=f"{_name(obj)}: " + "; ".join(
                f"{field}: {message}" for field, message in problems))
        converted.append(out)
    return _answer(body, uid, converted=converted)


def _answer(body: Mapping[str, Any], uid: str, *, failure: str = "",
            converted: list[Body] | None = None) -> Body:
    response: Body = {"uid": uid}
    if failure:
        response["result"] = {"status": "Failure", "message": failure}
    else:
        response["result"] = {"status": "Success"}
        response["convertedObjects"] = converted or []
    return {"apiVersion": str(body.get("apiVersion") or "apiextensions.k8s.io/v1"),
            "kind": "ConversionReview", "response": response}


def _problem(obj: Any) -> str:
    if not isinstance(obj, Mapping):
        return f"objects: expected an object, got {type(obj).__name__}"
    if obj.get("apiVersion") not in VERSIONS:
        return f"{_name(obj)}: apiVersion {obj.get('apiVersion')!r} is not Kueue's"
    return ""


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('kind') or 'object'} {where}{meta.get('name') or '(unnamed)'}"


def answering_conversions(handler: Handler) -> Handler:
    """``handler`` (kopf's admission entry point), answering conversion reviews itself."""
    async def serve(data: Any, **kwargs: Any) -> Any:
        if isinstance(data, Mapping) and data.get("kind") == "ConversionReview":
            return review(data)
        return await handler(data, **kwargs)
    return serve
