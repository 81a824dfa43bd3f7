"""What the operator needs from a member cluster, whatever kind it is.

A member adapter answers three calls, each idempotent so a retried task is
harmless:

* :meth:`MemberAdapter.observe` — one look at the member: its nodes (with what
  the pods *not* sent by this manager already request on them) and every copy
  this manager sent there (found by the origin label), with their status and
  what their own bound pods request per node (:attr:`Copy.usage`: a restarted
  manager counts the copies it finds with it, see
  :meth:`multicluster.controller.Dispatcher.adopt`). A successful observation
  is also the member's health check;
* :meth:`MemberAdapter.create` — create a copy if absent (an existing copy of
  the same name counts as created); a member that *refuses* the copy (an
  answer that retrying cannot change: invalid, forbidden) is answered with
  :func:`refused` text instead of an exception, so the task is not retried
  and the operator's own backoff (:mod:`.create_failures`) takes over at once;
* :meth:`MemberAdapter.delete` — delete a copy (a Job or a JobSet) if present
  (absent counts as deleted); the copy's pods go with it (foreground propagation).

Only plain values cross this interface (they travel through rq as task
arguments and results): nodes as :class:`placement.model.Node`, copies as
:class:`Copy`. :mod:`.kubernetes_member` implements it for Kubernetes,
:mod:`.pool_member` for a Redis worker pool (its copies' ``body`` is a
Job-shaped status made by :func:`.pool_copy.job_status`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from placement.model import POD_SLOT, PODS, Node, Taint, TaintEffect, add_amounts

Body = dict[str, Any]

#: How a create's answer starts when the member refused the copy.
REFUSED_PREFIX: Final = "refused: "


def refused(why: str) -> str:
    """The answer of a create the member refused (``why``: its error)."""
    return f"{REFUSED_PREFIX}{why}"


def refusal_of(answer: object) -> str | None:
    """Why the member refused, if ``answer`` (a create's result) says it did."""
    if isinstance(answer, str) and answer.startswith(REFUSED_PREFIX):
        return answer[len(REFUSED_PREFIX):]
    return None


@dataclass(frozen=True, slots=True)
class Copy:
    """A copy this manager sent to a member, as observed there."""

    namespace: str
    name: str
    #: The local Workload it stands for (``ns/name``), from its annotation; "" if unreadable.
    workload: str
    #: The member object's body (its status is what follows the copy home).
    body: Body = field(default_factory=dict, compare=False)
    #: Node -> what the copy's bound, running pods request there (pods included);
    #: empty before the member has made and placed its pods.
    usage: Mapping[str, Mapping[str, int]] = field(default_factory=dict, compare=False)
    #: What it is: a ``Job`` or a ``JobSet`` (:mod:`.copies`).
    kind: str = "Job"

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class Observation:
    """One successful look at a member."""

    nodes: tuple[Node, ...]
    copies: tuple[Copy, ...]
    #: Objects that could not be read (a node with a bad quantity...); never fatal.
    problems: tuple[str, ...] = ()

    def to_json(self) -> Body:
        """Plain JSON values: a task's result travels through Redis as JSON, not pickled."""
        return {"nodes": [{"name": n.name, "allocatable": dict(n.allocatable),
                           "requested": dict(n.requested), "labels": dict(n.labels),
                           "taints": [[t.key, str(t.effect), t.value] for t in n.taints],
                           "unschedulable": n.unschedulable,
                           "nonzeroRequested": None if n.nonzero_requested is None
                           else dict(n.nonzero_requested)} for n in self.nodes],
                "copies": [{"namespace": c.namespace, "name": c.name, "workload": c.workload,
                            "body": c.body, "usage": {k: dict(v) for k, v in c.usage.items()},
                            "kind": c.kind}
                           for c in self.copies],
                "problems": list(self.problems)}

    @classmethod
    def from_json(cls, data: Body) -> Observation:
        return cls(
            nodes=tuple(Node(n["name"], n["allocatable"], n["requested"], n["labels"],
                             tuple(Taint(k, TaintEffect(e), v) for k, e, v in n["taints"]),
                             n["unschedulable"], n["nonzeroRequested"])
                        for n in data["nodes"]),
            copies=tuple(Copy(c["namespace"], c["name"], c["workload"], c["body"], c["usage"],
                              c.get("kind") or "Job")
                         for c in data["copies"]),
            problems=tuple(data["problems"]))


def add_pod(total: dict[str, int], requests: Mapping[str, int]) -> None:
    """One pod's requests (and its pod slot) into a node's total, in place."""
    add_amounts(total, requests)
    total[PODS] = total.get(PODS, 0) + POD_SLOT


class MemberAdapter(Protocol):
    def observe(self, origin: str) -> Observation: ...
    def create(self, body: Body) -> str: ...
    def delete(self, namespace: str, name: str, kind: str = "Job") -> str: ...
