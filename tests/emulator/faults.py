"""Injected failures: make the next N matching requests answer an error.

A test that wants to see a controller retry writes, say,
``emulator.faults.fail(plural="workloads", subresource="status", status=409, times=2)``:
the next two status writes to Workloads answer ``409 Conflict`` with a proper
``Status`` body, and the writes after them go through. A :class:`Fault`
counts its hits, so the test can assert the retries happened.

A fault matches on Kubernetes verbs (``create``, ``update``, ``patch``,
``delete``, ``get``, ``list``, ``watch``...; writes by default), the
resource's plural (and group), namespace, name and subresource; ``None``
means "any". Faults are checked before the request touches the store, so a
failed write changes nothing — as when a real server rejects it.
"""

from __future__ import annotations

import dataclasses
import threading

import kmock

from . import errors

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
ANY = "*"

_REASONS = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
    409: "Conflict", 410: "Expired", 422: "Invalid", 429: "TooManyRequests",
    500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout",
}


@dataclasses.dataclass
class Fault:
    """One injected failure rule and how often it fired."""

    status: int
    times: int
    verbs: frozenset[str] = WRITE_VERBS
    plural: str | None = None
    group: str | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = ANY
    message: str = ""
    hits: int = 0

    @property
    def remaining(self) -> int:
        return self.times - self.hits

    def matches(self, verb: str, group: str, plural: str, namespace: str | None,
                name: str | None, subresource: str | None) -> bool:
        return (
            self.remaining > 0
            and verb in self.verbs
            and self.plural in (None, plural)
            and self.group in (None, group)
            and self.namespace in (None, namespace)
            and self.name in (None, name)
            and (self.subresource == ANY or self.subresource == subresource)
        )

    def error(self, what: str, name: str | None) -> kmock.KubernetesError:
        if self.status == 409 and not self.message:
            return errors.api_error(409, "Conflict", f'Operation cannot be fulfilled on {what} '
                                    f'"{name}": the object has been modified; please apply '
                                    "your changes to the latest version and try again "
                                    "(injected fault)", name=name)
        reason = _REASONS.get(self.status, "InternalError")
        return errors.api_error(self.status, reason,
                                self.message or f"{reason} for {what} {name or ''} "
                                "(injected fault)".replace("  ", " "), name=name)


class Faults:
    """The active fault rules of one emulator; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[Fault] = []

    def fail(
        self,
        *,
        status: int = 500,
        times: int = 1,
        verbs: frozenset[str] | set[str] | tuple[str, ...] = WRITE_VERBS,
        plural: str | None = None,
        group: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = ANY,
        message: str = "",
    ) -> Fault:
        """Make the next ``times`` matching requests answer ``status``."""
        if times < 1:
            raise ValueError(f"fault times must be >= 1, not {times}")
        if not 400 <= status <= 599:
            raise ValueError(f"fault status must be an HTTP error code, not {status}")
        fault = Fault(status=status, times=times, verbs=frozenset(verbs), plural=plural,
                      group=group, namespace=namespace, name=name, subresource=subresource,
                      message=message)
        with self._lock:
            self._rules.append(fault)
        return fault

    def take(self, verb: str, group: str, plural: str, namespace: str | None,
             name: str | None, subresource: str | None) -> Fault | None:
        """The first rule this request triggers (its hit counted), if any."""
        with self._lock:
            for fault in self._rules:
                if fault.matches(verb, group, plural, namespace, name, subresource):
                    fault.hits += 1
                    return fault
        return None

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()
