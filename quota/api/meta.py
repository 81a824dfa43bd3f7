"""Kubernetes building blocks every kind uses: metadata, selectors, conditions, taints.

These mirror ``metav1.ObjectMeta``, ``metav1.LabelSelector``,
``metav1.Condition``, ``corev1.Taint`` and ``corev1.Toleration`` closely
enough that a manifest written for Kubernetes reads unchanged, and carry the
two pieces of Kubernetes semantics the core needs: whether a label selector
matches a set of labels, and whether a toleration tolerates a taint.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, ClassVar, Literal, Self

from pydantic import ConfigDict, Field, model_validator

from quota.api.base import ApiModel, Rules, StatusModel, join_path
from quota.api.names import (
    QualifiedName,
    dns_label_error,
    dns_subdomain_error,
    label_value_error,
    labels_errors,
    qualified_name_error,
)
from quota.labels import requirement_matches

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
ConditionStatus = Literal["True", "False", "Unknown"]


class OwnerReference(ApiModel):
    """The object that owns this one; deleting the owner deletes this object."""

    model_config = ConfigDict(extra="allow")

    api_version: str = Field(description="API group and version of the owner.")
    kind: str = Field(description="Kind of the owner.")
    name: str = Field(description="Name of the owner.")
    uid: str = Field(default="", description="UID of the owner.")
    controller: bool | None = Field(
        default=None, description="True if the owner is the managing controller."
    )
    block_owner_deletion: bool | None = Field(
        default=None, description="True if the owner cannot be deleted before this object."
    )


class ObjectMeta(ApiModel):
    """Standard Kubernetes object metadata; fields kuota does not read are kept as they are."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(
        default="", description="Name of the object, unique per kind (and namespace)."
    )
    generate_name: str | None = Field(
        default=None, description="Prefix for a server-generated name."
    )
    namespace: str | None = Field(default=None, description="Namespace of a namespaced object.")
    labels: dict[str, str] = Field(default_factory=dict, description="Labels for selection.")
    annotations: dict[str, str] = Field(default_factory=dict, description="Free-form annotations.")
    uid: str | None = Field(default=None, description="Unique id set by the API server.")
    resource_version: str | None = Field(
        default=None, description="Version for optimistic concurrency, set by the API server."
    )
    generation: int | None = Field(
        default=None, description="Spec generation, set by the API server."
    )
    creation_timestamp: datetime | None = Field(
        default=None, description="When the object was created."
    )
    deletion_timestamp: datetime | None = Field(
        default=None, description="When deletion was requested."
    )
    owner_references: tuple[OwnerReference, ...] = Field(
        default=(), description="Objects that own this one."
    )
    finalizers: tuple[str, ...] = Field(default=(), description="Finalizers that block deletion.")


class LabelSelectorRequirement(ApiModel):
    """One expression of a label selector: a key, an operator and values."""

    key: QualifiedName = Field(description="The label key the expression applies to.")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"] = Field(
        description="In / NotIn: the label's value is / is not one of values. "
        "Exists / DoesNotExist: the label is present / absent (values must be empty)."
    )
    values: tuple[str, ...] = Field(default=(), description="Values for In and NotIn.")

    @model_validator(mode="after")
    def _rules(self) -> Self:
        rules = Rules()
        if self.operator in ("In", "NotIn"):
            rules.check(
                bool(self.values), "values", f"must not be empty with operator {self.operator}"
            )
        else:
            rules.check(not self.values, "values", f"must be empty with operator {self.operator}")
        rules.raise_if_any()
        return self

    def matches(self, labels: Mapping[str, str]) -> bool:
        return requirement_matches(self.key, self.operator, self.values, labels)


class LabelSelector(ApiModel):
    """Selects objects by labels; all conditions must hold. An empty selector matches everything."""

    match_labels: dict[str, str] = Field(
        default_factory=dict, description="Labels that must be present with exactly these values."
    )
    match_expressions: tuple[LabelSelectorRequirement, ...] = Field(
        default=(), description="Expressions that must all hold."
    )

    @model_validator(mode="after")
    def _rules(self) -> Self:
        rules = Rules()
        for key, error in labels_errors(self.match_labels):
            rules.add(join_path("matchLabels", key), error)
        rules.raise_if_any()
        return self

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.match_labels.items()) and all(
            e.matches(labels) for e in self.match_expressions
        )


class Condition(StatusModel):
    """An observation of one aspect of an object's state, as in Kubernetes conditions."""

    type: str = Field(description="Condition type, e.g. Active, QuotaReserved, Admitted, Finished.")
    status: ConditionStatus = Field(description="True, False or Unknown.")
    reason: str = Field(default="", description="CamelCase reason for the last transition.")
    message: str = Field(default="", description="Human-readable details.")
    last_transition_time: datetime | None = Field(
        default=None, description="When the status last changed."
    )
    observed_generation: int | None = Field(
        default=None, description="The metadata.generation the condition was computed from."
    )

    @property
    def is_true(self) -> bool:
        return self.status == "True"


def find_condition(conditions: tuple[Condition, ...], type_: str) -> Condition | None:
    return next((c for c in conditions if c.type == type_), None)


class Taint(ApiModel):
    """A node taint: pods that do not tolerate it are kept off (or evicted from) the node."""

    key: QualifiedName = Field(description="Taint key, e.g. cloud.provider.com/preemptible.")
    value: str = Field(default="", description="Taint value.")
    effect: TaintEffect = Field(description="NoSchedule, PreferNoSchedule or NoExecute.")
    time_added: datetime | None = Field(
        default=None, description="When a NoExecute taint was added."
    )

    @model_validator(mode="after")
    def _rules(self) -> Self:
        rules = Rules()
        error = label_value_error(self.value)
        rules.check(error is None, "value", error or "")
        rules.raise_if_any()
        return self


class Toleration(ApiModel):
    """Lets a pod run on nodes with a matching taint."""

    key: str = Field(
        default="", description="Taint key to match; empty with operator Exists matches every key."
    )
    operator: Literal["Equal", "Exists"] = Field(
        default="Equal", description="Equal: the taint's value must equal value. Exists: any value."
    )
    value: str = Field(default="", description="Value to match with operator Equal.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(
        default=None, description="Taint effect to match; empty matches every effect."
    )
    toleration_seconds: int | None = Field(
        default=None, description="For NoExecute: how long the pod stays after the taint appears."
    )

    @model_validator(mode="after")
    def _rules(self) -> Self:
        rules = Rules()
        if self.key:
            error = qualified_name_error(self.key)
            rules.check(error is None, "key", error or "")
        else:
            rules.check(
                self.operator == "Exists",
                "operator",
                "must be Exists when key is empty (which matches every taint)",
            )
        if self.operator == "Exists":
            rules.check(not self.value, "value", "must be empty when operator is Exists")
        if self.toleration_seconds is not None:
            rules.check(
                self.effect == "NoExecute",
                "effect",
                "must be NoExecute when tolerationSeconds is set",
            )
        rules.raise_if_any()
        return self

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes' rule: effect (if set) and key (if set) equal, then value by operator."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


def tolerates_all(
    tolerations: tuple[Toleration, ...] | list[Toleration],
    taints: tuple[Taint, ...],
    effects: tuple[str, ...] = ("NoSchedule", "NoExecute"),
) -> Taint | None:
    """The first taint with one of ``effects`` that no toleration tolerates, or ``None``.

    Kueue considers only NoSchedule and NoExecute taints when matching flavors.
    """
    for taint in taints:
        if taint.effect in effects and not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


class ApiObject(ApiModel):
    """A top-level kuota object: apiVersion, kind, metadata (spec and status in subclasses)."""

    #: Plural resource name (``clusterqueues``).
    plural: ClassVar[str] = ""
    #: True for namespaced kinds.
    namespaced: ClassVar[bool] = False
    #: Short names for kubectl.
    short_names: ClassVar[tuple[str, ...]] = ()

    api_version: Literal["kuota.dev/v1alpha1"] = Field(
        default="kuota.dev/v1alpha1", description="API group and version: kuota.dev/v1alpha1."
    )
    kind: str = Field(description="Kind of the object.")
    metadata: ObjectMeta = Field(
        default_factory=ObjectMeta, description="Standard object metadata."
    )

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str | None:
        return self.metadata.namespace

    @property
    def key(self) -> str:
        """``namespace/name`` for namespaced objects, ``name`` otherwise."""
        if self.namespaced:
            return f"{self.metadata.namespace or 'default'}/{self.metadata.name}"
        return self.metadata.name

    @model_validator(mode="after")
    def _object_rules(self) -> Self:
        rules = Rules()
        name_error = dns_subdomain_error(self.metadata.name)
        rules.check(name_error is None, "metadata.name", name_error or "")
        if self.namespaced and self.metadata.namespace is not None:
            ns_error = dns_label_error(self.metadata.namespace)
            rules.check(ns_error is None, "metadata.namespace", ns_error or "")
        self.check_rules(rules)
        rules.raise_if_any()
        return self

    def check_rules(self, rules: Rules) -> None:
        """Rules spanning spec, status and metadata; paths are from the object's root."""

    def with_status(self, status: Any) -> Self:
        """A copy with a new status (objects are frozen)."""
        return self.model_copy(update={"status": status})
