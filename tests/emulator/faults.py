"""Injected failures: make matching requests answer an error, or lose their answer.

A test that wants to see a controller retry writes, say,
``emulator.faults.fail(plural="workloads", subresource="status", status=409, times=2)``:
the next two status writes to Workloads answer ``409 Conflict`` with a proper
``Status`` body, and the writes after them go through. A :class:`Fault`
counts its hits, so the test can assert the retries happened.

A fault matches on Kubernetes verbs (``create``, ``update``, ``patch``,
``delete``, ``get``, ``list``, ``watch``...; writes by default), the
resource's plural (and group), namespace, name and subresource; ``None``
means "any". By default a fault fires *before* the request touches the
store, so a failed write changes nothing — as when a real server rejects it.

What an overloaded or flaky server does, a fault can do too:

* ``rate``: only that fraction of the matching requests fails (drawn from the
  emulator's seeded random source), and ``times=None`` keeps the rule for
  good — "a fifth of all requests answer 503";
* ``retry_after``: the answer carries ``Retry-After: N`` and
  ``details.retryAfterSeconds`` as API Priority and Fairness does with its
  ``429 TooManyRequests``;
* ``status=RESET``: no answer at all, the connection is closed (a reset, a
  load balancer dropping the request);
* ``after=True``: the request is carried out and *then* its answer is
  replaced by the error (or the reset). The client cannot tell whether its
  write landed — what a timeout after the server committed looks like, the
  case that makes retrying a create or an unguarded update unsafe.
"""

from __future__ import annotations

import dataclasses
import random
import threading

import kmock

from . import errors

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
ALL_VERBS = WRITE_VERBS | {"get", "list", "watch"}
ANY = "*"
#: The ``status`` of a fault that answers nothing: the connection is closed.
RESET = 0

_REASONS = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
    409: "Conflict", 410: "Expired", 422: "Invalid", 429: "TooManyRequests",
    500: "InternalError", 502: "BadGateway", 503: "ServiceUnavailable", 504: "Timeout",
}


@dataclasses.dataclass
class Fault:
    """One injected failure rule and how often it fired."""

    #: The HTTP status answered, or :data:`RESET` (the connection is closed instead).
    status: int
    #: How many requests fail; None: every matching one, for as long as the rule stays.
    times: int | None
    verbs: frozenset[str] = WRITE_VERBS
    plural: str | None = None
    group: str | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = ANY
    message: str = ""
    #: The fraction of matching requests that fail (1: all of them).
    rate: float = 1.0
    #: Seconds announced in ``Retry-After`` (and ``details.retryAfterSeconds``).
    retry_after: int | None = None
    #: Fail after carrying the request out (the write lands, its answer is lost).
    after: bool = False
    hits: int = 0

    @property
    def remaining(self) -> float:
        return float("inf") if self.times is None else self.times - self.hits

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
        # The server renders retryAfterSeconds as the Retry-After header too.
        return errors.api_error(self.status, reason,
                                self.message or f"{reason} for {what} {name or ''} "
                                "(injected fault)".replace("  ", " "), name=name,
                                retryAfterSeconds=self.retry_after)


class Faults:
    """The active fault rules of one emulator; thread-safe."""

    def __init__(self, seed: int | None = 0) -> None:
        self._lock = threading.Lock()
        self._rules: list[Fault] = []
        #: Draws for ``rate`` faults; seeded, so a test's failures repeat run after run
        #: (as far as the order of its requests does).
        self._random = random.Random(seed)

    def fail(
        self,
        *,
        status: int = 500,
        times: int | None = 1,
        verbs: frozenset[str] | set[str] | tuple[str, ...] = WRITE_VERBS,
        plural: str | None = None,
        group: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = ANY,
        message: str = "",
        rate: float = 1.0,
        retry_after: int | None = None,
        after: bool = False,
    ) -> Fault:
        """Make the next ``times`` matching requests (None: all; ``rate``: that fraction of
        them) answer ``status`` — or, with ``status=RESET``, nothing."""
        if times is not None and times < 1:
            raise ValueError(f"fault times must be >= 1 or None, not {times}")
        if status != RESET and not 400 <= status <= 599:
            raise ValueError(f"fault status must be an HTTP error code or RESET, not {status}")
        if not 0 < rate <= 1:
            raise ValueError(f"fault rate must be in (0, 1], not {rate}")
        if after and "watch" in verbs:
            raise ValueError("a watch has no answer to lose: after=True cannot match watches")
        fault = Fault(status=status, times=times, verbs=frozenset(verbs), plural=plural,
                      group=group, namespace=namespace, name=name, subresource=subresource,
                      message=message, rate=rate, retry_after=retry_after, after=after)
        with self._lock:
            self._rules.append(fault)
        return fault

    def take(self, verb: str, group: str, plural: str, namespace: str | None,
             name: str | None, subresource: str | None, *, after: bool = False) -> Fault | None:
        """The first rule this request triggers (its hit counted), if any.

        ``after``: the request was carried out; only ``after`` rules are asked then.
        """
        with self._lock:
            for fault in self._rules:
                if fault.after is after \
                        and fault.matches(verb, group, plural, namespace, name, subresource) \
                        and (fault.rate >= 1 or self._random.random() < fault.rate):
                    fault.hits += 1
                    return fault
        return None

    def remove(self, fault: Fault) -> None:
        """Stop a rule (one with ``times=None`` stays until removed or cleared)."""
        with self._lock:
            self._rules = [rule for rule in self._rules if rule is not fault]

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()
