"""Turning a submission (CLI flags, a YAML file, Python arguments) into a checked Workload.

Everything a user can get wrong is caught here, before anything is written,
and reported as :class:`~quota.api.Problem` lines naming the field: a bad
name or queue, an unparsable quantity, a pod set without a command, an
unknown priority class, a negative backoff limit, and whatever a pool cannot
run (:mod:`kuota.service.runnable`: empty pod sets, NUL bytes, bad env
names). A submission that passes is a valid Workload manifest whose pods
have a command — so a malformed submission never reaches Redis, let alone a
worker. (The scheduler checks stored specs again, with the same rules, and
quarantines any written around this door.)
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from kuota.service import runnable
from quota import api

#: Annotation carrying the number of gang retries after a failed pod.
BACKOFF_ANNOTATION: Final = "kuota.dev/backoff-limit"
SOURCE: Final = "submit"


@dataclass(frozen=True)
class Submission:
    key: str
    queue: str  # namespace/localqueue
    manifest: dict[str, Any]
    priority: int
    backoff_limit: int


def split_key(name: str, default_namespace: str = "default") -> tuple[str, str]:
    """``ns/name`` or ``name`` (in the default namespace)."""
    namespace, sep, rest = name.partition("/")
    return (namespace, rest) if sep else (default_namespace, name)


def _problem(name: str, field: str, message: str) -> api.ObjectError:
    return api.ObjectError([api.Problem(SOURCE, "Workload", name, field, message)])


def generated_name(command: Sequence[str]) -> str:
    base = re.sub(r"[^a-z0-9-]+", "-", Path(command[0]).name.lower()).strip("-")[:40] \
        if command else ""
    return f"{base or 'workload'}-{secrets.token_hex(3)}"


def from_args(command: Sequence[str], *, queue: str, name: str | None = None, count: int = 1,
              requests: Mapping[str, str | int | float] | None = None,
              priority_class: str | None = None, priority: int | None = None,
              backoff_limit: int = 0, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The Workload manifest for a one-pod-set submission running ``command`` on each pod."""
    namespace, lq = split_key(queue)
    if not lq or not namespace:
        raise _problem(name or "", "queue", f"{queue!r} is not NAMESPACE/LOCALQUEUE")
    if not command:
        raise _problem(name or "", "command", "a command to run is required (after --)")
    if name and "/" in name:
        ns_of_name, name = split_key(name)
        if ns_of_name != namespace:
            raise _problem(name, "metadata.namespace", f"name says namespace {ns_of_name} but "
                           f"the queue is in namespace {namespace}")
    container: dict[str, Any] = {
        "name": "main", "command": list(command),
        "resources": {"requests": {k: str(v) for k, v in (requests or {}).items()}},
    }
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    spec: dict[str, Any] = {
        "queueName": lq,
        "podSets": [{"name": "main", "count": count, "template": {"spec": {
            "containers": [container]}}}],
    }
    if priority is not None:
        spec["priority"] = priority
    if priority_class:
        spec["priorityClassRef"] = {"group": "kuota.dev", "kind": "WorkloadPriorityClass",
                                    "name": priority_class}
    return {
        "apiVersion": "kuota.dev/v1alpha1", "kind": "Workload",
        "metadata": {"name": name or generated_name(command), "namespace": namespace,
                     "annotations": {BACKOFF_ANNOTATION: str(backoff_limit)}},
        "spec": spec,
    }


def check(manifest: Mapping[str, Any], priority_classes: Mapping[str, int], *,
          queue: str | None = None, source: str = SOURCE,
          default_requests: Mapping[str, Mapping[str, str]] | None = None) -> Submission:
    """Validate a Workload manifest for Redis mode; raises :class:`~quota.api.ObjectError`.

    ``default_requests``: per LocalQueue (``namespace/name``), the per-pod requests given to
    pod sets that request nothing (the LocalQueue's ``spec.defaultRequests``).
    """
    obj = parse_workload(manifest, source=source)
    name = obj.metadata.name
    problems: list[api.Problem] = []

    def problem(field: str, message: str) -> None:
        problems.append(api.Problem(source, "Workload", name, field, message))

    namespace = obj.metadata.namespace or "default"
    lq = obj.spec.queue_name
    if queue is not None:
        q_ns, lq = split_key(queue)
        if q_ns != namespace:
            problem("spec.queueName", f"queue {queue} is not in the workload's namespace "
                    f"{namespace}")
    if not lq:
        problem("spec.queueName", "is required (the LocalQueue to submit to)")
    defaults = (default_requests or {}).get(f"{namespace}/{lq}")
    if defaults:
        obj = with_default_requests(obj, defaults, source)
    problems += runnable.problems(obj, source)
    priority = obj.spec.priority
    pc = obj.spec.priority_class_name
    if pc is not None and obj.spec.priority_class_ref is not None \
            and obj.spec.priority_class_ref.kind == "WorkloadPriorityClass":
        if pc not in priority_classes:
            known = ", ".join(sorted(priority_classes)) or "none"
            problem("spec.priorityClassRef.name",
                    f"WorkloadPriorityClass {pc} does not exist (known: {known})")
        elif priority is None:
            priority = priority_classes[pc]
    raw_backoff = obj.metadata.annotations.get(BACKOFF_ANNOTATION, "0")
    try:
        backoff = int(raw_backoff)
        if backoff < 0:
            raise ValueError
    except ValueError:
        problem(f"metadata.annotations[{BACKOFF_ANNOTATION}]",
                f"{raw_backoff!r} is not a whole number >= 0")
        backoff = 0
    if problems:
        raise api.ObjectError(problems)
    stored = obj.to_dict()
    stored["spec"]["queueName"] = lq
    stored["spec"]["priority"] = priority or 0
    return Submission(f"{namespace}/{name}", f"{namespace}/{lq}", stored, priority or 0,
                      backoff)


def with_default_requests(obj: api.Workload, defaults: Mapping[str, str],
                          source: str) -> api.Workload:
    """``obj`` with ``defaults`` as the first container's requests in every pod set whose
    pods request nothing — what a LimitRange's ``defaultRequest`` does on Kubernetes."""
    empty = [i for i, ps in enumerate(obj.spec.pod_sets)
             if not ps.pod_requests() and ps.template.spec.containers]
    if not empty:
        return obj
    doc = obj.to_dict()
    for i in empty:
        container = doc["spec"]["podSets"][i]["template"]["spec"]["containers"][0]
        container.setdefault("resources", {})["requests"] = dict(defaults)
    return parse_workload(doc, source=source)


def parse_workload(manifest: Mapping[str, Any], *, source: str) -> api.Workload:
    """``manifest`` as a Workload; :class:`quota.api.ObjectError` if it is another kind."""
    obj = api.parse_object(manifest, source=source)
    if not isinstance(obj, api.Workload):
        raise api.ObjectError([api.Problem(source, obj.kind, obj.metadata.name, "kind",
                                           "expected a Workload")])
    return obj


@dataclass(frozen=True)
class StoredRules:
    """What a submission is checked against that lives in the store: the priority classes
    and each LocalQueue's default requests. Read once per batch of submissions (the
    scheduler's intake of requests), not once per workload."""

    priority_classes: Mapping[str, int]
    default_requests: Mapping[str, Mapping[str, str]]

    @classmethod
    def read(cls, store: Any) -> StoredRules:
        """The rules as stored. A stored object that does not read (written around kuota:
        not JSON, a list, a value of the wrong type) is left out, as if it were not there:
        a submission to another queue is not refused for it, and one that names it is
        refused as naming nothing."""
        priorities = {name: value for name, m in
                      store.objects.manifests("WorkloadPriorityClass").items()
                      if (value := _priority_value(m)) is not None}
        defaults = {key: requests for key, m in store.objects.manifests("LocalQueue").items()
                    if (requests := _default_requests(m)) is not None}
        return cls(priorities, defaults)

    def check(self, manifest: Mapping[str, Any], *, queue: str | None = None,
              source: str = SOURCE) -> Submission:
        """:func:`check` against these rules."""
        return check(manifest, self.priority_classes, queue=queue, source=source,
                     default_requests=self.default_requests)


def _priority_value(manifest: Mapping[str, Any]) -> int | None:
    """A stored WorkloadPriorityClass's value, or None when it is no whole number."""
    value = manifest.get("value", 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _default_requests(manifest: Mapping[str, Any]) -> dict[str, str] | None:
    """A stored LocalQueue's ``spec.defaultRequests``, or None when the spec is malformed."""
    spec = manifest.get("spec", {})
    requests = spec.get("defaultRequests") or {} if isinstance(spec, dict) else None
    if not isinstance(requests, dict):
        return None
    return {str(k): str(v) for k, v in requests.items()}


#: The stored kinds a never-fits verdict reads (namespace labels are not: a submitter
#: limited to its namespace may not read them, and no selector decides "never").
QUEUE_KINDS: Final = ("ResourceFlavor", "AdmissionCheck", "Cohort", "ClusterQueue", "LocalQueue")


def queue_objects(store: Any) -> list[Any]:
    """The stored queue objects as the core's configs; one that does not read (written
    around kuota) is left out, as the scheduler leaves it out."""
    from kuota.service import rebuild

    parsed = rebuild.ParsedObjects()
    objects = []
    for kind in QUEUE_KINDS:
        for name, text in store.objects.texts(kind).items():
            obj = parsed.parse(kind, name, text)
            if not isinstance(obj, str):
                objects.append(obj)
    return objects


def never_fits(queues: list[Any], manifest: Mapping[str, Any], *, priority: int = 0,
               source: str = SOURCE) -> Any:
    """Why a checked Workload ``manifest`` can never be admitted as ``queues`` (from
    :func:`queue_objects`) are configured — an :class:`admission.inadmissible.Verdict`: its
    LocalQueue or ClusterQueue does not exist, a resource no flavor covers or matches, more
    than its ClusterQueue can ever get — or None when it may be admitted once quota is
    free. Decided with the core's own rule, on an engine of those configs alone."""
    from admission import inadmissible
    from admission.engine import Engine
    from quota import convert

    engine = Engine()
    engine.apply_all(queues)
    info = convert.workload(parse_workload(manifest, source=source), priority=priority,
                            created=0.0)
    return inadmissible.never_fits(info, engine.cache)
