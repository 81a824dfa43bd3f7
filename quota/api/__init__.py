"""kuota's API objects (group ``kuota.dev/v1alpha1``), modelled on Kueue v1beta2.

One module per kind, plus shared pieces (:mod:`.meta`, :mod:`.quotas`,
:mod:`.podtemplate`, :mod:`.quantity`, :mod:`.names`). Models are frozen
pydantic models: snake_case attributes, camelCase aliases, tuples for lists.
Parse untrusted data with :func:`parse_object` / :func:`load_objects`, which
convert Kueue v1beta1/v1beta2 manifests and report :class:`Problem` lists;
construct objects in code with keyword arguments (lists are accepted and
stored as tuples).

Differences from a literal reading of Kueue v1beta1, for code that knows it:
``ClusterQueueSpec.admission_checks`` and ``WorkloadSpec.priority_class_name``
/ ``priority_class_source`` are read-only properties derived from the v1beta2
fields ``admission_checks_strategy`` and ``priority_class_ref`` (build the
latter with ``PriorityClassRef.workload(name)``).

Names are loaded on first use (PEP 562): ``from quota.api import Workload``
imports the workload modules only, so a command that touches one kind does
not pay for building all of them (``kuota submit`` must start in 0.3 s).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from quota.api.admissioncheck import (
        AdmissionCheck,
        AdmissionCheckParametersReference,
        AdmissionCheckSpec,
        AdmissionCheckStatus,
    )
    from quota.api.base import API_VERSION, GROUP, VERSION, ApiModel
    from quota.api.clusterqueue import (
        AdmissionChecksStrategy,
        AdmissionCheckStrategyRule,
        BorrowWithinCohort,
        ClusterQueue,
        ClusterQueuePreemption,
        ClusterQueueSpec,
        ClusterQueueStatus,
        FlavorFungibility,
    )
    from quota.api.cohort import Cohort, CohortSpec, CohortStatus
    from quota.api.loader import load_objects, parse_documents, read_documents
    from quota.api.localqueue import LocalQueue, LocalQueueSpec, LocalQueueStatus
    from quota.api.membercluster import (
        CostRate,
        FlavorCapacity,
        KubeConfig,
        MemberCluster,
        MemberClusterSpec,
        MemberClusterStatus,
    )
    from quota.api.meta import (
        ApiObject,
        Condition,
        LabelSelector,
        LabelSelectorRequirement,
        ObjectMeta,
        OwnerReference,
        Taint,
        Toleration,
        find_condition,
        tolerates_all,
    )
    from quota.api.multiclusterconfig import (
        MultiClusterConfig,
        MultiClusterConfigSpec,
        ScoreWeight,
    )
    from quota.api.podtemplate import (
        Container,
        PodSpec,
        PodTemplateSpec,
        ResourceRequirements,
        pod_requests,
    )
    from quota.api.priorityclass import WorkloadPriorityClass
    from quota.api.problems import ObjectError, Problem
    from quota.api.quantity import Quantity, RequestQuantity, amount, amounts
    from quota.api.quotas import (
        FairSharing,
        FairSharingStatus,
        FlavorQuotas,
        FlavorUsage,
        ResourceGroup,
        ResourceQuota,
        ResourceUsage,
    )
    from quota.api.registry import KINDS, parse_object, problems_from
    from quota.api.resourceflavor import ResourceFlavor, ResourceFlavorSpec
    from quota.api.topology import Topology, TopologyLevel, TopologySpec
    from quota.api.workload import (
        PodSet,
        PodSetTopologyRequest,
        PriorityClassRef,
        Workload,
        WorkloadSpec,
    )
    from quota.api.workload_status import (
        Admission,
        AdmissionCheckState,
        PodSetAssignment,
        RequeueState,
        TopologyAssignment,
        WorkloadStatus,
    )

_WHERE: dict[str, str] = {
    'API_VERSION': 'base',
    'Admission': 'workload_status',
    'AdmissionCheck': 'admissioncheck',
    'AdmissionCheckParametersReference': 'admissioncheck',
    'AdmissionCheckSpec': 'admissioncheck',
    'AdmissionCheckState': 'workload_status',
    'AdmissionCheckStatus': 'admissioncheck',
    'AdmissionCheckStrategyRule': 'clusterqueue',
    'AdmissionChecksStrategy': 'clusterqueue',
    'ApiModel': 'base',
    'ApiObject': 'meta',
    'BorrowWithinCohort': 'clusterqueue',
    'ClusterQueue': 'clusterqueue',
    'ClusterQueuePreemption': 'clusterqueue',
    'ClusterQueueSpec': 'clusterqueue',
    'ClusterQueueStatus': 'clusterqueue',
    'Cohort': 'cohort',
    'CohortSpec': 'cohort',
    'CohortStatus': 'cohort',
    'Condition': 'meta',
    'Container': 'podtemplate',
    'CostRate': 'membercluster',
    'FairSharing': 'quotas',
    'FairSharingStatus': 'quotas',
    'FlavorCapacity': 'membercluster',
    'FlavorFungibility': 'clusterqueue',
    'FlavorQuotas': 'quotas',
    'FlavorUsage': 'quotas',
    'GROUP': 'base',
    'KINDS': 'registry',
    'KubeConfig': 'membercluster',
    'LabelSelector': 'meta',
    'LabelSelectorRequirement': 'meta',
    'LocalQueue': 'localqueue',
    'LocalQueueSpec': 'localqueue',
    'LocalQueueStatus': 'localqueue',
    'MemberCluster': 'membercluster',
    'MemberClusterSpec': 'membercluster',
    'MemberClusterStatus': 'membercluster',
    'MultiClusterConfig': 'multiclusterconfig',
    'MultiClusterConfigSpec': 'multiclusterconfig',
    'ObjectError': 'problems',
    'ObjectMeta': 'meta',
    'OwnerReference': 'meta',
    'PodSet': 'workload',
    'PodSetAssignment': 'workload_status',
    'PodSetTopologyRequest': 'workload',
    'PodSpec': 'podtemplate',
    'PodTemplateSpec': 'podtemplate',
    'PriorityClassRef': 'workload',
    'Problem': 'problems',
    'Quantity': 'quantity',
    'RequestQuantity': 'quantity',
    'RequeueState': 'workload_status',
    'ResourceFlavor': 'resourceflavor',
    'ResourceFlavorSpec': 'resourceflavor',
    'ResourceGroup': 'quotas',
    'ResourceQuota': 'quotas',
    'ResourceRequirements': 'podtemplate',
    'ResourceUsage': 'quotas',
    'ScoreWeight': 'multiclusterconfig',
    'Taint': 'meta',
    'Toleration': 'meta',
    'Topology': 'topology',
    'TopologyAssignment': 'workload_status',
    'TopologyLevel': 'topology',
    'TopologySpec': 'topology',
    'VERSION': 'base',
    'Workload': 'workload',
    'WorkloadPriorityClass': 'priorityclass',
    'WorkloadSpec': 'workload',
    'WorkloadStatus': 'workload_status',
    'amount': 'quantity',
    'amounts': 'quantity',
    'find_condition': 'meta',
    'load_objects': 'loader',
    'parse_documents': 'loader',
    'parse_object': 'registry',
    'pod_requests': 'podtemplate',
    'problems_from': 'registry',
    'read_documents': 'loader',
    'tolerates_all': 'meta',
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'quota.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"quota.api.{module}"), name)
    globals()[name] = value  # once: the next lookup is a plain global
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

__all__ = [
    "API_VERSION",
    "GROUP",
    "KINDS",
    "VERSION",
    "Admission",
    "AdmissionCheck",
    "AdmissionCheckParametersReference",
    "AdmissionCheckSpec",
    "AdmissionCheckState",
    "AdmissionCheckStatus",
    "AdmissionCheckStrategyRule",
    "AdmissionChecksStrategy",
    "ApiModel",
    "ApiObject",
    "BorrowWithinCohort",
    "ClusterQueue",
    "ClusterQueuePreemption",
    "ClusterQueueSpec",
    "ClusterQueueStatus",
    "Cohort",
    "CohortSpec",
    "CohortStatus",
    "Condition",
    "Container",
    "CostRate",
    "FairSharing",
    "FairSharingStatus",
    "FlavorCapacity",
    "FlavorFungibility",
    "FlavorQuotas",
    "FlavorUsage",
    "KubeConfig",
    "LabelSelector",
    "LabelSelectorRequirement",
    "LocalQueue",
    "LocalQueueSpec",
    "LocalQueueStatus",
    "MemberCluster",
    "MemberClusterSpec",
    "MemberClusterStatus",
    "MultiClusterConfig",
    "MultiClusterConfigSpec",
    "ObjectError",
    "ObjectMeta",
    "OwnerReference",
    "PodSet",
    "PodSetAssignment",
    "PodSetTopologyRequest",
    "PodSpec",
    "PodTemplateSpec",
    "PriorityClassRef",
    "Problem",
    "Quantity",
    "RequestQuantity",
    "RequeueState",
    "ResourceFlavor",
    "ResourceFlavorSpec",
    "ResourceGroup",
    "ResourceQuota",
    "ResourceRequirements",
    "ResourceUsage",
    "ScoreWeight",
    "Taint",
    "Toleration",
    "Topology",
    "TopologyAssignment",
    "TopologyLevel",
    "TopologySpec",
    "Workload",
    "WorkloadPriorityClass",
    "WorkloadSpec",
    "WorkloadStatus",
    "amount",
    "amounts",
    "find_condition",
    "load_objects",
    "parse_documents",
    "parse_object",
    "pod_requests",
    "problems_from",
    "read_documents",
    "tolerates_all",
]
