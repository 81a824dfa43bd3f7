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
    if total > MAX_PODS:
        problem("spec.podSets", f"{total} pods in all; a pool runs at most {MAX_PODS} pods "
                "per workload")
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
