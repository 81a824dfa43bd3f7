"""MemberCluster: a place that runs admitted workloads, for multi-cluster dispatch.

A member is either a Kubernetes cluster, reached with a kubeconfig (a Secret
in the operator's namespace, key ``kubeconfig``, or a file path, as in Kueue's
MultiKueueCluster), or a Redis worker ``pool`` (the nodes ``kuota worker
--pool NAME`` registered). Exactly one of the two is set.

The spec says what the dispatcher may rely on when it chooses a member:

- ``region``, ``zone``, ``provider`` and free-form ``labels`` are matched by a
  Job's ``kuota.dev/cluster-selector`` annotation. Region, zone and provider
  are also visible to selectors under the well-known keys
  ``topology.kubernetes.io/region``, ``topology.kubernetes.io/zone`` and
  ``kuota.dev/provider`` (see :meth:`MemberCluster.selector_labels`);
- ``taints`` keep workloads away unless their pods tolerate them (a taint on
  the cluster acts as if every node of it carried it);
- ``cost`` prices resources per hour, optionally per flavor;
- ``datasets`` names the data held locally, matched by ``kuota.dev/datasets``.

The status is observed by the multi-cluster controller: condition ``Active``
(with a reason such as ``Unreachable``), when the member was last seen, its
node count, and capacity and free capacity per flavor.
"""

from __future__ import annotations

import re
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Final, Literal, Self

from pydantic import BeforeValidator, Field, WithJsonSchema, model_validator

from quota.api.base import ApiModel, Rules, StatusModel, join_path
from quota.api.meta import ApiObject, Condition, Taint
from quota.api.names import LabelName, QualifiedName, label_value_error, labels_errors
from quota.api.quantity import Quantity, amount

#: Condition type saying whether the member takes workloads.
ACTIVE: Final = "Active"
#: Selector keys under which region, zone and provider are visible.
REGION_LABEL: Final = "topology.kubernetes.io/region"
ZONE_LABEL: Final = "topology.kubernetes.io/zone"
PROVIDER_LABEL: Final = "kuota.dev/provider"

PRICE_PATTERN: Final = r"^[0-9]+(\.[0-9]+)?$"
_PRICE_RE: Final = re.compile(PRICE_PATTERN)
DATASET_PATTERN: Final = r"^[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?$"
_DATASET_RE: Final = re.compile(DATASET_PATTERN)


def _check_price(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float | Decimal):
        raise ValueError(f"{value!r} is not a price (expected a decimal like '2.50')")
    text = value.strip() if isinstance(value, str) else str(value)
    if not _PRICE_RE.match(text):
        raise ValueError(f"{text!r} is not a price (a non-negative decimal like '2.50')")
    return text


#: A non-negative decimal amount of money, stored as written (no rounding).
Price = Annotated[
    str,
    BeforeValidator(_check_price),
    WithJsonSchema({"anyOf": [{"type": "integer"}, {"type": "string"}],
                    "x-kubernetes-int-or-string": True, "pattern": PRICE_PATTERN}),
]


def _check_dataset(value: object) -> str:
    if not isinstance(value, str) or not _DATASET_RE.match(value) or len(value) > 253:
        raise ValueError(f"{value!r} is not a dataset name (letters, digits, '-', '_', '.' and "
                         "'/', starting and ending with a letter or digit, at most 253)")
    return value


#: A dataset name, e.g. ``imagenet-2012`` or ``laion/5b``.
DatasetName = Annotated[
    str,
    BeforeValidator(_check_dataset),
    WithJsonSchema({"type": "string", "maxLength": 253, "pattern": DATASET_PATTERN}),
]


class KubeConfig(ApiModel):
    """Where the kubeconfig of a Kubernetes member is found."""

    location: str = Field(
        min_length=1,
        max_length=256,
        description="Secret name (in the operator's namespace, key kubeconfig) or file path.",
    )
    location_type: Literal["Secret", "Path"] = Field(
        default="Secret", description="Secret: location names a Secret. Path: a file path."
    )


class CostRate(ApiModel):
    """The hourly price of one resource on this member."""

    resource: QualifiedName = Field(description="Resource name, e.g. cpu or nvidia.com/gpu.")
    flavor: str | None = Field(
        default=None,
        max_length=253,
        description="Flavor this price applies to; absent: every flavor without its own price.",
    )
    per: Quantity = Field(
        default="1",
        description="Amount the price is for, e.g. 1 (cpu, GPU) or 1Gi (memory). Must be > 0.",
    )
    price: Price = Field(description="Price of `per` of the resource for one hour, e.g. '2.50'.")


class MemberClusterSpec(ApiModel):
    """How to reach a member and what it offers."""

    kube_config: KubeConfig | None = Field(
        default=None, description="A Kubernetes member: where its kubeconfig is. Set this or pool."
    )
    pool: LabelName | None = Field(
        default=None, description="A Redis worker pool member: the pool name. Set this or "
        "kubeConfig.",
    )
    region: str | None = Field(
        default=None, max_length=63,
        description="Region, also selectable as topology.kubernetes.io/region.",
    )
    zone: str | None = Field(
        default=None, max_length=63,
        description="Zone, also selectable as topology.kubernetes.io/zone.",
    )
    provider: str | None = Field(
        default=None, max_length=63,
        description="Provider (aws, gcp, onprem...), also selectable as kuota.dev/provider.",
    )
    labels: dict[str, str] = Field(
        default_factory=dict,
        max_length=64,
        description="Labels matched by a Job's kuota.dev/cluster-selector annotation "
        "(together with metadata.labels).",
    )
    taints: tuple[Taint, ...] = Field(
        default=(),
        max_length=16,
        description="Taints of the whole member: workloads whose pods do not tolerate the "
        "NoSchedule and NoExecute ones are not sent here.",
    )
    cost: tuple[CostRate, ...] = Field(
        default=(), max_length=64,
        description="Hourly prices per resource (and optionally per flavor); an unpriced "
        "resource costs nothing.",
    )
    datasets: tuple[DatasetName, ...] = Field(
        default=(), max_length=256,
        description="Datasets held locally, matched by a Job's kuota.dev/datasets annotation.",
    )

    @model_validator(mode="after")
    def _rules(self) -> Self:
        rules = Rules()
        rules.check((self.kube_config is None) != (self.pool is None), "",
                    "set exactly one of kubeConfig (a Kubernetes member) and pool (a Redis "
                    "worker pool)")
        for field, value in (("region", self.region), ("zone", self.zone),
                             ("provider", self.provider)):
            error = label_value_error(value or "")
            rules.check(error is None, field, error or "")
        for key, error in labels_errors(self.labels):
            rules.add(join_path("labels", key), error)
        for key, field in ((REGION_LABEL, "region"), (ZONE_LABEL, "zone"),
                           (PROVIDER_LABEL, "provider")):
            rules.check(key not in self.labels, join_path("labels", key),
                        f"is set from spec.{field}; set {field} instead")
        seen_taints: set[tuple[str, str]] = set()
        for i, taint in enumerate(self.taints):
            rules.check((taint.key, taint.effect) not in seen_taints, f"taints[{i}]",
                        f"duplicate taint {taint.key}:{taint.effect} (taints must be unique by "
                        "key and effect)")
            seen_taints.add((taint.key, taint.effect))
        seen_rates: set[tuple[str, str | None]] = set()
        for i, rate in enumerate(self.cost):
            rules.check(amount(rate.per) > 0, f"cost[{i}].per", f"{rate.per} must be > 0")
            where = f" for flavor {rate.flavor}" if rate.flavor else ""
            rules.check((rate.resource, rate.flavor) not in seen_rates, f"cost[{i}]",
                        f"{rate.resource}{where} is priced twice")
            seen_rates.add((rate.resource, rate.flavor))
        for i, name in enumerate(self.datasets):
            rules.check(name not in self.datasets[:i], f"datasets[{i}]",
                        f"dataset {name} is listed twice")
        rules.raise_if_any()
        return self


class FlavorCapacity(StatusModel):
    """Amounts per resource on the nodes of one flavor."""

    name: str = Field(description="Flavor name.")
    resources: dict[str, Quantity] = Field(default_factory=dict,
                                           description="Amount per resource.")


class MemberClusterStatus(StatusModel):
    """Observed state of a member, written by the multi-cluster controller."""

    conditions: tuple[Condition, ...] = Field(
        default=(), max_length=16,
        description="Conditions, notably Active (False with a reason such as Unreachable).",
    )
    last_seen_time: datetime | None = Field(
        default=None, description="When the member last answered a health check.",
    )
    node_count: int | None = Field(default=None, ge=0, description="Nodes observed.")
    capacity: tuple[FlavorCapacity, ...] = Field(
        default=(), description="Allocatable amounts per flavor.",
    )
    free_capacity: tuple[FlavorCapacity, ...] = Field(
        default=(), description="Allocatable minus requested, per flavor.",
    )


class MemberCluster(ApiObject):
    """A Kubernetes cluster or Redis worker pool that admitted workloads are dispatched to."""

    plural = "memberclusters"
    short_names = ("mc",)

    kind: Literal["MemberCluster"] = Field(default="MemberCluster", description="MemberCluster.")
    spec: MemberClusterSpec = Field(
        description="Connection, labels, taints, prices and datasets.")
    status: MemberClusterStatus = Field(
        default_factory=MemberClusterStatus,
        description="Observed state, written by the multi-cluster controller.",
    )

    def check_rules(self, rules: Rules) -> None:
        for key, value in self.spec.labels.items():
            other = self.metadata.labels.get(key)
            rules.check(other is None or other == value, join_path("spec.labels", key),
                        f"{value!r} contradicts metadata.labels[{key}] = {other!r}")
        for key, field, given in ((REGION_LABEL, "region", self.spec.region),
                                  (ZONE_LABEL, "zone", self.spec.zone),
                                  (PROVIDER_LABEL, "provider", self.spec.provider)):
            labelled = self.metadata.labels.get(key)
            rules.check(labelled is None or not given or labelled == given, f"spec.{field}",
                        f"{given!r} contradicts metadata.labels[{key}] = {labelled!r}")

    def selector_labels(self) -> dict[str, str]:
        """What ``kuota.dev/cluster-selector`` matches: metadata.labels, spec.labels, and
        region, zone and provider under their well-known keys."""
        labels = {**self.metadata.labels, **self.spec.labels}
        for key, value in ((REGION_LABEL, self.spec.region), (ZONE_LABEL, self.spec.zone),
                           (PROVIDER_LABEL, self.spec.provider)):
            if value:
                labels[key] = value
        return labels
