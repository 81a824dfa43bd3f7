"""What the operator holds about one MemberCluster while leading, and the two things it
derives from the object alone: the task spec of a Kubernetes member (its kubeconfig,
from a file or a Secret in the operator namespace) and the ``status`` it writes back.

The federation controller (:mod:`.federation`) decides; this module only reads a
kubeconfig and shapes a status body.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kuota.operator import names, status
from kuota.operator.client import Client
from multicluster import convert
from multicluster.model import Health
from placement.model import Node
from quota import api
from quota.api import yaml_input
from quota.api.membercluster import ACTIVE
from quota.config import FlavorConfig

Body = dict[str, Any]
#: How long a kubeconfig read from a Secret is used before it is read again (seconds).
SECRET_REFRESH: Final = 60.0


@dataclass
class Member:
    """What the operator knows about one MemberCluster at run time."""

    obj: api.MemberCluster
    #: Why the member cannot be reached at all (bad kubeconfig, pool member), if so.
    problem: str | None = None
    #: The task spec (``{"kind", "kubeconfig"}``) and when it was read.
    spec: Body | None = None
    spec_read: float = 0.0
    last_seen: float | None = None
    error: str | None = "not observed yet"
    #: Lost once; inactive until the copies it kept are deleted.
    recovering: bool = False
    nodes: tuple[Node, ...] = ()
    #: ``nodes`` with what the dispatcher placed there counted (what status shows free).
    loaded: tuple[Node, ...] = ()
    due: float = 0.0
    condition: tuple[bool, str, str] = (False, "Pending", "not observed yet")
    written: Body = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.obj.metadata.name

    @property
    def health(self) -> Health:
        active, reason, message = self.condition
        return Health(active, reason, message, self.last_seen)


async def kubeconfig_spec(obj: api.MemberCluster, client: Client | None,
                          namespace: str) -> Body:
    """The task spec of a Kubernetes member: its kubeconfig, from a file or a Secret."""
    where = obj.spec.kube_config
    assert where is not None
    if where.location_type == "Path":
        text = await asyncio.to_thread(yaml_input.read_file, where.location)
    else:
        if client is None:
            raise ValueError("no API client yet")
        secret = await client.get(names.SECRETS, where.location, namespace)
        data = (secret.get("data") or {}).get("kubeconfig")
        if not data:
            raise ValueError(f"Secret {namespace}/{where.location} has no data.kubeconfig")
        text = base64.b64decode(data).decode()
    config = yaml_input.safe_load(text)  # an InputLimitError is a ValueError
    if not isinstance(config, dict) or not config.get("clusters"):
        raise ValueError(f"{where.location} is not a kubeconfig (no clusters)")
    return {"kind": "Kubernetes", "kubeconfig": config}


def status_body(member: Member, flavors: Mapping[str, FlavorConfig], now: float) -> Body:
    """The MemberCluster ``status`` for what is known of the member at ``now``."""
    active, reason, message = member.condition
    existing = [c.to_dict() for c in member.obj.status.conditions]
    conditions = status.merge_conditions(
        existing, [status.condition(ACTIVE, active, reason, message, now)])
    capacity, free = convert.capacity_status(member.loaded, flavors)
    return {
        "conditions": conditions,
        "lastSeenTime": status.timestamp(member.last_seen) if member.last_seen else None,
        "nodeCount": len(member.nodes) if member.last_seen else None,
        "capacity": [{"name": c.name, "resources": dict(c.resources)} for c in capacity],
        "freeCapacity": [{"name": c.name, "resources": dict(c.resources)} for c in free],
    }
