"""What a real API server checks and fills in on every write, before storing an object.

The store calls :func:`admit` on create and update. In the real server these
rules live in each type's "strategy" and in the admission chain; here they
are a short list:

* names follow RFC 1123 (subdomains; DNS labels for namespaces and services),
  label keys and values follow the label syntax (63 characters, alphanumeric
  ends) — operators that build names from user input break here first;
* custom resources are pruned, defaulted and validated by their CRD schema
  (:mod:`.schema`);
* a few built-in defaults that controllers read: a namespace is ``Active``,
  a new pod ``Pending`` with ``terminationGracePeriodSeconds: 30``, a Job gets
  ``parallelism``/``completions``/``suspend``/``backoffLimit`` as the real
  defaulting does;
* updates of pods and Jobs change only what their validation lets change
  (:mod:`.updates`: a gated pod's nodeSelector only grows, a Job's template
  only while it is suspended and not started);
* a Job's ``spec.managedBy`` and its status writes follow the Job registry's
  rules (:mod:`.jobs`);
* a CustomResourceDefinition must describe a servable resource
  (:func:`~.resources.types_from_crd`) that does not shadow a built-in, and
  is answered with the ``Established`` status real CRDs reach.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping
from typing import Any

from . import errors, jobs, schema, updates
from .resources import CRD_GROUP, CRDError, Registry, ResourceType, types_from_crd

Obj = dict[str, Any]

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def timestamp(moment: datetime.datetime) -> str:
    """Kubernetes' wire format for times: RFC 3339, UTC, whole seconds."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def meta_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def admit(rtype: ResourceType, obj: Obj, old: Obj | None, *, registry: Registry,
          now: datetime.datetime) -> Obj:
    """The object as it will be stored, or a 422 error listing every problem."""
    meta = obj["metadata"]
    problems = check_meta(rtype, meta)
    if rtype.custom:
        obj, schema_problems = schema.admit(obj, rtype.schema)
        problems += schema_problems
    if rtype.key == ("batch", "jobs"):
        problems += jobs.problems(obj, old)
    if problems:
        raise errors.invalid(rtype, meta.get("name", ""), problems)
    _DEFAULTERS.get(rtype.key, _no_defaults)(obj, old)
    if old is not None:
        problems = updates.check(rtype.key, obj, old)
        if problems:
            raise errors.invalid(rtype, meta.get("name", ""), problems)
    if rtype.key == (CRD_GROUP, "customresourcedefinitions"):
        _admit_crd(rtype, obj, old, registry, now)
    return obj


def check_meta(rtype: ResourceType, meta: Mapping[str, Any]) -> list[str]:
    """Problems with the object's name and labels, as the real validation words them."""
    problems = []
    name = meta.get("name", "")
    dns_label = rtype.key in (("", "namespaces"), ("", "services"))
    pattern, limit = (_DNS_LABEL, 63) if dns_label else (_SUBDOMAIN, 253)
    if rtype.key != ("", "events") and (not pattern.match(name) or len(name) > limit):
        problems.append(f'metadata.name: Invalid value: "{name}": a lowercase RFC 1123 '
                        f'{"label" if dns_label else "subdomain"} must consist of lower case '
                        "alphanumeric characters, '-' or '.', and must start and end with an "
                        "alphanumeric character")
    for key, value in (meta.get("labels") or {}).items():
        prefix, _, label = str(key).rpartition("/")
        if not _LABEL_VALUE.match(label) or not label or len(label) > 63 or \
                (prefix and not _SUBDOMAIN.match(prefix)):
            problems.append(f'metadata.labels: Invalid value: "{key}": name part must consist '
                            "of alphanumeric characters, '-', '_' or '.' (at most 63)")
        if not isinstance(value, str) or not _LABEL_VALUE.match(value) or len(value) > 63:
            problems.append(f'metadata.labels: Invalid value: "{value}": a valid label must be '
                            "an empty string or consist of alphanumeric characters, '-', '_' "
                            "or '.', and must start and end with an alphanumeric character "
                            "(at most 63 characters)")
    return problems


def _admit_crd(rtype: ResourceType, crd: Obj, old: Obj | None, registry: Registry,
               now: datetime.datetime) -> None:
    name = crd["metadata"].get("name", "")
    try:
        new_types = types_from_crd(crd)
    except CRDError as exc:
        raise errors.invalid(rtype, name, [str(exc)]) from exc
    for new in new_types:
        clash = registry.get(new.group, new.version, new.plural)
        if clash is not None and not clash.custom:
            raise errors.invalid(rtype, name,
                                 [f"spec.group: {new.api_version}/{new.plural} is built in"])
    conditions = ((old or {}).get("status") or {}).get("conditions") or [
        {"type": kind, "status": "True", "reason": reason, "message": message,
         "lastTransitionTime": timestamp(now)}
        for kind, reason, message in (
            ("NamesAccepted", "NoConflicts", "no conflicts found"),
            ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        )
    ]
    crd["status"] = {
        "acceptedNames": dict(crd["spec"]["names"]),
        "storedVersions": [v["name"] for v in crd["spec"]["versions"] if v.get("storage")],
        "conditions": conditions,
    }


def _no_defaults(obj: Obj, old: Obj | None) -> None:
    return None


def _default_namespace(obj: Obj, old: Obj | None) -> None:
    if not meta_of(obj).get("deletionTimestamp"):
        obj.setdefault("status", {}).setdefault("phase", "Active")


def _default_pod(obj: Obj, old: Obj | None) -> None:
    obj.setdefault("status", {}).setdefault("phase", "Pending")
    spec = obj.get("spec")
    if isinstance(spec, dict) and spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30  # (a bare test pod without spec keeps none)


def _default_job(obj: Obj, old: Obj | None) -> None:
    spec = obj.setdefault("spec", {})
    if spec.get("parallelism") is None and spec.get("completions") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("suspend", False)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")


_DEFAULTERS: dict[tuple[str, str], Callable[[Obj, Obj | None], None]] = {
    ("", "namespaces"): _default_namespace,
    ("", "pods"): _default_pod,
    ("batch", "jobs"): _default_job,
}
