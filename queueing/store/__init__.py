"""The Redis store: kuota's source of truth in Redis mode.

Everything lives under one key prefix, with every key built in
:mod:`~queueing.store.keys`; every state change is one Lua script (or a
MULTI/EXEC transaction) in :mod:`~queueing.store.lua`, atomic and safe to
retry. This package is the only part of :mod:`queueing` that imports redis.
"""

from queueing.store.errors import (
    AlreadyExists,
    Conflict,
    Fenced,
    NodeInUse,
    NotFound,
    StoreError,
)
from queueing.store.keys import DEFAULT_PREFIX, Keys, PodRef
from queueing.store.records import (
    NodeRecord,
    NodeState,
    Outcome,
    PodPhase,
    PodRecord,
    WorkloadRecord,
)
from queueing.store.store import Store

__all__ = [
    "DEFAULT_PREFIX",
    "AlreadyExists",
    "Conflict",
    "Fenced",
    "Keys",
    "NodeInUse",
    "NodeRecord",
    "NodeState",
    "NotFound",
    "Outcome",
    "PodPhase",
    "PodRecord",
    "PodRef",
    "Store",
    "StoreError",
    "WorkloadRecord",
]
