"""What a Workload must be for a Redis worker pool to run it — checked at every door.

The API models accept what Kubernetes and Kueue accept; a worker pool runs
pods as local processes, which asks more of a spec:

* **every pod set has a program**: its first container's ``command`` (and
  ``args``), an argument list (:func:`kuota.service.jobs.pod_command`);
* **every pod requests something**: requests are what bound how many pods
  share a queue's quota and a node; a pod requesting nothing would run
  anywhere, any number at once. A LocalQueue's ``defaultRequests`` fills
  them in at submission (:func:`kuota.service.submission.with_default_requests`);
* **every pod set has pods**: at least one (Kueue allows ``count: 0`` for
  pod sets a Job may scale to; a pool has nothing to run for one, and a
  gang with an empty pod set is not something a user means) and the whole
  workload at most :data:`MAX_PODS` — a bound on what one scheduling step,
  one Redis script and one placement round take on;
* **a command a process can have**: ``execve`` takes C strings, so a NUL
  byte in an argument, an environment name or value cannot be passed on —
  the process would never start, and the pod would hang as Running;
* **environment names a process can have**: not empty, printable ASCII,
  no ``=`` (the separator of ``NAME=value``) — Kubernetes' relaxed rule;
* **a command the kernel will start**: Linux refuses ``execve`` ("Argument
  list too long") for one argument or ``NAME=value`` over 128 KiB
  (``MAX_ARG_STRLEN``) and for arguments and environment together over
  ``ARG_MAX`` (2 MiB with the default 8 MiB stack). A pod that cannot start
  would fail on every attempt, so the bound is checked at submission:
  :data:`MAX_ARG_BYTES` each, :data:`MAX_EXEC_BYTES` together — half of
  ``ARG_MAX``, the other half left to the variables the worker adds
  (``KUOTA_PEERS`` alone may take 64 KiB);
* **a manifest of a bounded size**: :data:`MAX_MANIFEST_BYTES` (1.5 MiB of
  JSON), the size etcd, and so Kubernetes, refuses objects past. Every
  scheduler, worker and dashboard holds and decodes the manifest; a 50 MB one
  grew the scheduler by 500 MB, the worker by 800 MB;
* **nothing it would silently ignore**: a pool runs the first container's
  ``command`` as a process on its node, in its ``workingDir``, with its
  literal ``env``; an ``image``, volumes and mounts, more containers, init
  containers, and env taken from sources are refused naming the field (no
  pool runs containers yet).

The same :func:`problems` runs on ``kuota submit``, ``Client.submit`` and —
for specs written into Redis around them — on the scheduler's read of every
stored spec (:func:`kuota.service.rebuild.workload_object`), so one rule
decides at every door.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Final

from kuota.service import jobs
from quota import api

#: Container fields a pool cannot honour: it runs the command as a process on the node.
UNSUPPORTED_CONTAINER_FIELDS: Final = ("volumeMounts", "volumeDevices", "envFrom")
NOT_RUN: Final = ("{what} cannot be honoured: a worker pool runs the first container's "
                  "command as a process on its node, with no image, volumes or other "
                  "containers")

#: Most pods one workload may ask for in a pool (all pod sets together).
MAX_PODS: Final = 10_000
#: Largest manifest, as compact UTF-8 JSON: etcd's default request limit, past which
#: Kubernetes refuses an object.
MAX_MANIFEST_BYTES: Final = 1536 * 1024
#: Longest argument or ``NAME=value``: Linux's MAX_ARG_STRLEN (32 pages) less its NUL.
MAX_ARG_BYTES: Final = 32 * 4096 - 1
#: Most the command, its arguments and the pod's own environment may take, counted as
#: execve counts them (each string with its NUL, and a pointer to it): half of ARG_MAX.
MAX_EXEC_BYTES: Final = 1024 * 1024
_POINTER: Final = 8


def problems(obj: api.Workload, source: str) -> list[api.Problem]:
    """Every reason a pool cannot run ``obj``, one :class:`~quota.api.Problem` each."""
    name = obj.metadata.name
    found: list[api.Problem] = []

    def problem(field: str, message: str) -> None:
        found.append(api.Problem(source, "Workload", name, field, message))

    total = 0
    for i, ps in enumerate(obj.spec.pod_sets):
        try:
            jobs.pod_command(obj, ps.name)
        except ValueError as exc:
            problem(f"spec.podSets[{ps.name}]", str(exc).split(": ", 1)[-1])
        at = f"spec.podSets[{i}]"
        total += ps.count
        if ps.template.spec.containers and not ps.pod_requests():
            problem(f"{at}.template.spec.containers[0].resources.requests",
                    "requests nothing, so nothing would bound how many pods run at once: "
                    "give requests (kuota submit --requests cpu=1, or resources.requests in "
                    "the pod template), or set spec.defaultRequests on the LocalQueue")
        if ps.count < 1:
            problem(f"{at}.count", f"must be at least 1 (got {ps.count}): a pod set with no "
                    "pods has nothing to run")
        spec = ps.template.spec
        for field, present in (("initContainers", bool(spec.init_containers)),
                               ("volumes", bool((spec.model_extra or {}).get("volumes"))),
                               ("containers", len(spec.containers) > 1)):
            if present:
                problem(f"{at}.template.spec.{field}", NOT_RUN.format(
                    what="more than one container" if field == "containers" else field))
        for c, container in enumerate(spec.containers):
            where = f"{at}.template.spec.containers[{c}]"
            extra = container.model_extra or {}
            asked = {"image": container.image,
                     **{field: extra.get(field) for field in UNSUPPORTED_CONTAINER_FIELDS}}
            for field, value in asked.items():
                if value:
                    problem(f"{where}.{field}", NOT_RUN.format(what=field))
            for part in ("command", "args"):
                for a, arg in enumerate(getattr(container, part) or ()):
                    if "\0" in arg:
                        problem(f"{where}.{part}[{a}]", "contains a NUL byte, which no process "
                                "argument can hold")
            for e, var in enumerate(container.env or ()):
                error = env_name_error(var.name)
                if error:
                    problem(f"{where}.env[{e}].name", error)
                if (var.model_extra or {}).get("valueFrom"):
                    problem(f"{where}.env[{e}].valueFrom", NOT_RUN.format(
                        what="env from a source (Secret, ConfigMap, field)") +
                        "; give the value itself")
                if var.value is not None and "\0" in var.value:
                    problem(f"{where}.env[{e}].value", "contains a NUL byte, which no "
                            "environment variable can hold")
        if spec.containers:
            found += exec_problems(spec.containers[0], f"{at}.template.spec.containers[0]",
                                   source, name)
    if total > MAX_PODS:
        problem("spec.podSets", f"{total} pods in all; a pool runs at most {MAX_PODS} pods "
                "per workload")
    doc = obj.to_dict()
    size = json_bytes(doc)
    if size > MAX_MANIFEST_BYTES:
        field, largest = largest_string(doc)
        problem("", f"the manifest is {size:,} bytes of JSON; at most {MAX_MANIFEST_BYTES:,} "
                f"(1.5 MiB, the most Kubernetes stores in an object); its largest field is "
                f"{field} ({largest:,} bytes)")
    return found


def json_bytes(value: object) -> int:
    """The size of ``value`` as compact UTF-8 JSON."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return len(text.encode("utf-8", "surrogatepass"))


def largest_string(doc: object) -> tuple[str, int]:
    """(path, UTF-8 size) of the longest string in ``doc``, in manifest spelling."""
    best = ("", 0)
    stack: list[tuple[str, object]] = [("", doc)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            stack += ((f"{path}.{k}" if path else str(k), v) for k, v in value.items())
        elif isinstance(value, list):
            stack += ((f"{path}[{i}]", v) for i, v in enumerate(value))
        elif isinstance(value, str):
            size = len(value.encode("utf-8", "surrogatepass"))
            best = max(best, (path, size), key=lambda pair: pair[1])
    return best


def _exec_strings(container: api.Container, where: str) -> Iterator[tuple[str, bytes]]:
    """(field, string as execve gets it) for the command, arguments and environment."""
    for part in ("command", "args"):
        for a, arg in enumerate(getattr(container, part) or ()):
            yield f"{where}.{part}[{a}]", arg.encode("utf-8", "surrogatepass")
    for e, var in enumerate(container.env or ()):
        text = f"{var.name}={var.value or ''}"
        yield f"{where}.env[{e}].value", text.encode("utf-8", "surrogatepass")


def exec_problems(container: api.Container, where: str, source: str,
                  name: str) -> list[api.Problem]:
    """Why the kernel would refuse to start the container's command, naming the field."""
    found: list[api.Problem] = []
    total = 0
    for field, string in _exec_strings(container, where):
        total += len(string) + 1 + _POINTER
        if len(string) > MAX_ARG_BYTES:
            found.append(api.Problem(source, "Workload", name, field, (
                f"is {len(string):,} bytes; a process argument or environment variable "
                f"holds at most {MAX_ARG_BYTES:,} (Linux's MAX_ARG_STRLEN), so the pod could "
                "never start (\"Argument list too long\"): pass it in a file")))
    if total > MAX_EXEC_BYTES:
        found.append(api.Problem(source, "Workload", name, f"{where}.command", (
            f"command, args and env take {total:,} bytes; at most {MAX_EXEC_BYTES:,}, half of "
            "the kernel's ARG_MAX (the rest is kept for kuota's variables), so the pod could "
            "never start (\"Argument list too long\"): pass them in a file")))
    return found


def env_name_error(name: str) -> str | None:
    """Why ``name`` cannot be an environment variable's name, or None."""
    if not name:
        return "must not be empty"
    if "=" in name:
        return f"{name[:40]!r} contains '=', which separates a variable's name from its value"
    if not all(" " <= ch <= "~" for ch in name):
        return f"{name[:40]!r} must be printable ASCII characters"
    return None
