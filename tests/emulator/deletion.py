"""How a real API server and its garbage collector decide what a DELETE does.

Pure rules the store applies (facts from the Kubernetes sources, 1.34/1.36):

* **Propagation.** A DELETE names ``propagationPolicy`` (``Orphan``,
  ``Background``, ``Foreground``), or the legacy ``orphanDependents``. With
  neither, the resource's strategy decides: ``batch/v1`` Jobs *orphan* their
  dependents for backwards compatibility
  (``pkg/registry/batch/job/strategy.go``, ``DefaultGarbageCollectionPolicy``),
  everything else the emulator serves deletes them in the background. So the
  ``kubernetes`` Python client's plain ``delete_namespaced_job`` leaves the
  Job's pods — and anything else it owns — behind, while ``kubectl delete``
  asks for background deletion explicitly.
* **Orphan** puts the ``orphan`` finalizer on the object; the garbage
  collector removes the object's owner reference from every dependent, then
  the finalizer, and the object goes.
* **Foreground** puts the ``foregroundDeletion`` finalizer on the object
  (with ``deletionTimestamp``); the collector deletes its dependents, and
  removes the finalizer only once no dependent that *blocks* it
  (``blockOwnerDeletion: true``) is left. Until then the owner is visible,
  being deleted.
* **Graceful deletion of pods** (``pkg/registry/core/pod/strategy.go``,
  ``CheckGracefulDelete``): the grace period is the request's
  ``gracePeriodSeconds``, else the pod's ``terminationGracePeriodSeconds``
  (defaulted to 30); it is 0 — the pod goes at once — when the pod was never
  scheduled (no ``spec.nodeName``) or already ended (``Succeeded``/``Failed``).
  Otherwise the pod only gets ``deletionTimestamp`` (now + grace) and
  ``deletionGracePeriodSeconds``; the kubelet removes it once its containers
  stopped, with a DELETE of grace period 0. The emulator has no kubelet: a
  test plays it with ``api.delete(..., grace_period=0)``. A later DELETE may
  shorten the grace period, never lengthen it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from . import errors

ORPHAN, BACKGROUND, FOREGROUND = "Orphan", "Background", "Foreground"
#: The finalizers the garbage collector owns for each propagation policy.
GC_FINALIZERS: Final = {ORPHAN: "orphan", FOREGROUND: "foregroundDeletion"}
#: Resources whose strategy orphans dependents when a DELETE names no policy.
_ORPHAN_BY_DEFAULT: Final = frozenset({("batch", "jobs")})
_POD_DEFAULT_GRACE: Final = 30


def propagation(resource: tuple[str, str], policy: str | None,
                orphan_dependents: Any = None) -> str:
    """The propagation policy of a DELETE of ``resource`` (``(group, plural)``)."""
    if policy:
        if policy not in (ORPHAN, BACKGROUND, FOREGROUND):
            raise errors.bad_request(f'unsupported propagationPolicy "{policy}": must be one '
                                     'of "Orphan", "Background" or "Foreground"')
        return policy
    if orphan_dependents is not None:
        wanted = str(orphan_dependents).lower() == "true"
        return ORPHAN if wanted else BACKGROUND
    return ORPHAN if resource in _ORPHAN_BY_DEFAULT else BACKGROUND


def pod_grace_period(pod: Mapping[str, Any], requested: int | None) -> int:
    """Seconds a DELETE of ``pod`` lets it terminate; 0 means it goes at once."""
    spec = pod.get("spec") or {}
    period = requested if requested is not None else \
        int(spec.get("terminationGracePeriodSeconds", _POD_DEFAULT_GRACE) or 0)
    if not spec.get("nodeName"):
        return 0  # never scheduled: no kubelet runs anything to stop
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return 0
    return max(period, 1) if period < 0 else period


def grace_period(resource: tuple[str, str], obj: Mapping[str, Any],
                 requested: int | None) -> int:
    """The grace period of a DELETE: pods only; every other resource goes at once."""
    if resource == ("", "pods"):
        return pod_grace_period(obj, requested)
    return 0


def parse_grace(raw: Any) -> int | None:
    """``gracePeriodSeconds`` from a query parameter or DeleteOptions (None: not given)."""
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise errors.bad_request(f"gracePeriodSeconds: invalid value {raw!r}") from None


def owned_by(obj: Mapping[str, Any], uid: str, *, blocking: bool = False) -> bool:
    """Whether ``obj`` names ``uid`` among its owners (and, with ``blocking``, blocks it)."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("uid") == uid and (not blocking or ref.get("blockOwnerDeletion") is True):
            return True
    return False


def without_owner(obj: dict[str, Any], uid: str) -> None:
    """Drop ``uid`` from ``obj``'s owner references, as the orphaning collector does."""
    meta = obj.get("metadata") or {}
    refs = [r for r in meta.get("ownerReferences") or [] if r.get("uid") != uid]
    if refs:
        meta["ownerReferences"] = refs
    else:
        meta.pop("ownerReferences", None)
