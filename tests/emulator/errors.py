"""Kubernetes ``Status`` errors, with the codes, reasons and messages the real server uses.

kmock renders a raised :class:`kmock.KubernetesError` as a ``Status`` object
with its HTTP code, so clients (kubectl, kopf, the ``kubernetes`` client) see
the same failures they would see from a real API server: ``pods "x" not
found``, ``Operation cannot be fulfilled on ...``, and so on.
"""

from __future__ import annotations

from typing import Any

import kmock

from .resources import ResourceType


def api_error(code: int, reason: str, message: str, **details: Any) -> kmock.KubernetesError:
    return kmock.KubernetesError(status=code, reason=reason, message=message,
                                 details={k: v for k, v in details.items() if v is not None})


def _what(rtype: ResourceType) -> str:
    return str(rtype)


def _details(rtype: ResourceType, name: str | None) -> dict[str, Any]:
    return {"name": name, "group": rtype.group, "kind": rtype.plural}


def not_found(rtype: ResourceType, name: str) -> kmock.KubernetesError:
    return api_error(404, "NotFound", f'{_what(rtype)} "{name}" not found',
                     **_details(rtype, name))


def namespace_not_found(namespace: str) -> kmock.KubernetesError:
    return api_error(404, "NotFound", f'namespaces "{namespace}" not found',
                     name=namespace, kind="namespaces")


def already_exists(rtype: ResourceType, name: str) -> kmock.KubernetesError:
    return api_error(409, "AlreadyExists", f'{_what(rtype)} "{name}" already exists',
                     **_details(rtype, name))


def conflict(rtype: ResourceType, name: str, why: str = "the object has been modified; "
             "please apply your changes to the latest version and try again",
             ) -> kmock.KubernetesError:
    return api_error(409, "Conflict", f'Operation cannot be fulfilled on {_what(rtype)} '
                     f'"{name}": {why}', **_details(rtype, name))


def invalid(rtype: ResourceType, name: str, causes: list[str]) -> kmock.KubernetesError:
    text = causes[0] if len(causes) == 1 else "[" + ", ".join(causes) + "]"
    kind = f"{rtype.kind}.{rtype.group}" if rtype.group else rtype.kind
    return api_error(422, "Invalid", f'{kind} "{name}" is invalid: {text}',
                     name=name, group=rtype.group, kind=rtype.kind,
                     causes=[{"message": cause} for cause in causes])


def bad_request(message: str) -> kmock.KubernetesError:
    return api_error(400, "BadRequest", message)


def method_not_allowed(message: str) -> kmock.KubernetesError:
    return api_error(405, "MethodNotAllowed", message)


def unsupported_media_type(message: str) -> kmock.KubernetesError:
    return api_error(415, "UnsupportedMediaType", message)


def gone(message: str) -> kmock.KubernetesError:
    return api_error(410, "Expired", message)


def page_not_found(path: str) -> kmock.KubernetesError:
    return api_error(404, "NotFound", f"the server could not find the requested resource "
                     f"({path})")
