"""Kueue's Configuration file, read by ``kuota operator --config FILE``.

Kueue's controller reads one YAML document, ``kind: Configuration`` of
``config.kueue.x-k8s.io`` — ``v1beta1`` or ``v1beta2``, the two versions
Kueue v0.15 decodes (strictly: an unknown field is an error). kuota reads the
same file so that a team moving from Kueue keeps it, and either *honours* a
field — maps it onto the operator's options, with Kueue's meaning — or
*refuses* it with an error naming the field. Nothing is accepted and left
aside: :data:`FIELDS` lists every field Kueue v0.15 defines, each marked
:class:`Honoured` or :class:`Refused` with the words the documentation table
uses (docs/operator.md, "Kueue's Configuration file").

Three rules of Kueue's own that change what an absent field means:

* an empty value (``null``, ``[]``, ``{}``) says nothing, as in Go's
  ``omitempty``; but ``integrations.frameworks`` absent or empty is Kueue's
  default, ``[batch/job]`` — a file that names no framework queues Jobs only;
* ``v1beta1``'s ``waitForPodsReady.enable`` and ``fairSharing.enable`` turn
  the feature on; ``v1beta2`` turns it on by the section's presence (what the
  conversion between the two does);
* the feature gate ``LocalQueueDefaulting`` is on unless the file turns it
  off (Kueue v0.15's default): unlabelled objects go to their namespace's
  LocalQueue ``default`` when there is one — kuota's ``--default-queue``.

Pure: text in, :class:`KueueSettings` out (or :class:`ConfigError` listing
every problem, each naming its field). ``kuota.commands.operator`` applies the
settings under the command line's flags, which win.
"""

from __future__ import annotations

import pathlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pydantic
import yaml

from kuota.operator.settings import NAMESPACE_NAME_LABEL, POD_KINDS
from quota.api import yaml_input
from quota.api.meta import LabelSelector
from quota.config import PodsReadyConfig, RequeuingStrategy

GROUP = "config.kueue.x-k8s.io"
VERSIONS = ("v1beta1", "v1beta2")
V1 = frozenset({"v1beta1"})
V2 = frozenset({"v1beta2"})
BOTH = frozenset(VERSIONS)

#: Kueue's framework names -> the kinds kuota queues for each (``Options.frameworks``).
FRAMEWORKS: Mapping[str, str] = {
    "batch/job": "Job",
    "jobset.x-k8s.io/jobset": "JobSet",
    "trainer.kubeflow.org/trainjob": "TrainJob",
    "kubeflow.org/mpijob": "MPIJob",
    "kubeflow.org/pytorchjob": "PyTorchJob",
    "kubeflow.org/tfjob": "TFJob",
    "kubeflow.org/xgboostjob": "XGBoostJob",
    "kubeflow.org/paddlejob": "PaddleJob",
    "kubeflow.org/jaxjob": "JAXJob",
    "ray.io/rayjob": "RayJob",
    "ray.io/raycluster": "RayCluster",
    "pod": "Pod",
    "deployment": "Deployment",
    "statefulset": "StatefulSet",
    "leaderworkerset.x-k8s.io/leaderworkerset": "LeaderWorkerSet",
}
#: Frameworks Kueue knows that kuota does not queue (refused by name).
UNQUEUED_FRAMEWORKS = frozenset({"workload.codeflare.dev/appwrapper"})
#: Kueue's default leader-election Lease name. kuota recognises a running Kueue by it
#: (kuota.operator.kueue_api), so a file naming it keeps kuota's own default Lease instead.
KUEUE_LEASE = "c1f6bfd2.kueue.x-k8s.io"
#: Kueue's defaults kuota adopts for fields present in part.
DEFAULT_WEBHOOK_PORT = 9443
DEFAULT_PODS_READY_TIMEOUT = 300.0
#: The one feature gate kuota knows (on by default in Kueue v0.15).
LOCAL_QUEUE_DEFAULTING = "LocalQueueDefaulting"
#: The preemption strategies kuota's fair sharing applies (Kueue's default pair, in order).
FAIR_STRATEGIES = ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]


@dataclass(frozen=True)
class Honoured:
    """A field kuota maps onto its options; ``does`` says how (the docs table's words)."""

    does: str
    versions: frozenset[str] = BOTH


@dataclass(frozen=True)
class Refused:
    """A field kuota refuses whenever the file sets it; ``why`` is the error's reason."""

    why: str
    versions: frozenset[str] = BOTH


Rule = Honoured | Refused

_CERTS = "kuota makes no certificates: give them with --webhook-cert-dir or --webhook-secret"
_NO_CLIENT_LIMIT = ("kuota's API client has no client-side rate limit (writes are bounded by "
                    "their number in flight instead)")

#: Every field of Kueue v0.15's Configuration (both versions), by path. ``[]`` marks a list
#: of objects; a map (feature gates, a label selector, resource lists) is one field.
FIELDS: Mapping[str, Rule] = {
    "namespace": Honoured("--operator-namespace (where MemberCluster kubeconfig Secrets are "
                          "read); the default namespace of the Lease and of the default "
                          "managedJobsNamespaceSelector"),
    "manageJobsWithoutQueueName": Honoured(
        "false: kuota's own behaviour (objects without a queue label run unmanaged); true is "
        "refused: kuota does not hold unlabelled objects suspended"),
    "managedJobsNamespaceSelector": Honoured(
        "with a pod-based framework: pods, Deployments, StatefulSets and LeaderWorkerSets "
        "are queued only in matching namespaces (absent: all but kube-system and "
        "`namespace`); without one it has no effect, as in Kueue"),
    "internalCertManagement.enable": Honoured("false: certificates come from "
                                              "--webhook-cert-dir / --webhook-secret; true is "
                                              "refused (" + _CERTS + ")"),
    "internalCertManagement.webhookServiceName": Refused(_CERTS),
    "internalCertManagement.webhookSecretName": Refused(_CERTS),
    "waitForPodsReady.enable": Honoured("turns waitForPodsReady on (v1beta1)", V1),
    "waitForPodsReady.timeout": Honoured("--pods-ready-timeout"),
    "waitForPodsReady.blockAdmission": Honoured("blocks admissions while an admitted "
                                                "workload's pods are not ready"),
    "waitForPodsReady.requeuingStrategy.timestamp": Honoured(
        "Eviction / Creation: the queue order after a PodsReadyTimeout eviction"),
    "waitForPodsReady.requeuingStrategy.backoffLimitCount": Honoured(
        "deactivates a workload after this many requeues"),
    "waitForPodsReady.requeuingStrategy.backoffBaseSeconds": Honoured("requeue backoff base"),
    "waitForPodsReady.requeuingStrategy.backoffMaxSeconds": Honoured("requeue backoff cap"),
    "waitForPodsReady.recoveryTimeout": Refused(
        "kuota does not time out a running workload whose pods stopped being ready"),
    "clientConnection.qps": Refused(_NO_CLIENT_LIMIT),
    "clientConnection.burst": Refused(_NO_CLIENT_LIMIT),
    "integrations.frameworks": Honoured(
        "the kinds kuota queues (absent or empty: batch/job only, Kueue's default); "
        "workload.codeflare.dev/appwrapper is refused"),
    "integrations.externalFrameworks": Refused(
        "kuota queues only the kinds it knows (integrations.frameworks)"),
    "integrations.podOptions.namespaceSelector": Refused(
        "deprecated; use managedJobsNamespaceSelector", V1),
    "integrations.podOptions.podSelector": Refused("deprecated; Kueue v0.15 ignores it", V1),
    "integrations.labelKeysToCopy": Refused("kuota copies no labels onto Workloads"),
    "queueVisibility.clusterQueues.maxCount": Refused(
        "deprecated; the visibility API gives pending workloads on demand", V1),
    "queueVisibility.updateIntervalSeconds": Refused(
        "deprecated; the visibility API gives pending workloads on demand", V1),
    "multiKueue.gcInterval": Refused("kuota's dispatch deletes a member's copy with its "
                                     "Workload; there is no periodic collection"),
    "multiKueue.origin": Honoured("--manager-id (the origin label of copies in members)"),
    "multiKueue.workerLostTimeout": Refused(
        "a lost member's workloads fail over by its health check (--member-interval)"),
    "multiKueue.dispatcherName": Refused(
        "members are chosen by MultiClusterConfig filters and scores"),
    "multiKueue.externalFrameworks[].name": Refused(
        "dispatch carries Jobs and JobSets only"),
    "multiKueue.clusterProfile.credentialsProviders[].name": Refused(
        "members log in with their kubeconfig Secret", V2),
    "multiKueue.clusterProfile.credentialsProviders[].execConfig": Refused(
        "members log in with their kubeconfig Secret", V2),
    "fairSharing.enable": Honoured("--fair-sharing (v1beta1)", V1),
    "fairSharing.preemptionStrategies": Honoured(
        "--fair-sharing (v1beta2: the section turns it on); kuota applies "
        "[LessThanOrEqualToFinalShare, LessThanInitialShare], any other list is refused"),
    "admissionFairSharing.usageHalfLifeTime": Refused("admission fair sharing is not "
                                                      "implemented"),
    "admissionFairSharing.usageSamplingInterval": Refused("admission fair sharing is not "
                                                          "implemented"),
    "admissionFairSharing.resourceWeights": Refused("admission fair sharing is not "
                                                    "implemented"),
    "resources.excludeResourcePrefixes": Refused(
        "kuota counts every resource a pod requests"),
    "resources.transformations[].input": Refused("kuota counts pod requests as they are"),
    "resources.transformations[].strategy": Refused("kuota counts pod requests as they are"),
    "resources.transformations[].outputs": Refused("kuota counts pod requests as they are"),
    "resources.deviceClassMappings[].name": Refused("kuota does not count DRA claims"),
    "resources.deviceClassMappings[].deviceClassNames": Refused(
        "kuota does not count DRA claims"),
    "featureGates": Honoured("LocalQueueDefaulting (on unless set false) is --default-queue; "
                             "any other gate is refused by name"),
    "objectRetentionPolicies.workloads.afterFinished": Refused(
        "kuota deletes no finished Workloads (their owners' deletion does)"),
    "objectRetentionPolicies.workloads.afterDeactivatedByKueue": Refused(
        "kuota deletes no deactivated objects"),
    "webhook.port": Honoured("--webhook-listen HOST:PORT (HOST: webhook.host, else 0.0.0.0)"),
    "webhook.host": Honoured("--webhook-listen's HOST (port: webhook.port, else 9443)"),
    "webhook.certDir": Honoured("--webhook-cert-dir"),
    "leaderElection.leaderElect": Honoured("false: --lease none"),
    "leaderElection.leaseDuration": Honoured("the Lease's duration"),
    "leaderElection.renewDeadline": Refused(
        "kuota's leader steps down at the first failed renewal, each attempt cut off at a "
        "third of (leaseDuration - retryPeriod)"),
    "leaderElection.retryPeriod": Honoured("how often the Lease is renewed or tried"),
    "leaderElection.resourceLock": Honoured("leases (the only lock kuota uses); other locks "
                                            "are refused"),
    "leaderElection.resourceName": Honoured(
        "--lease's NAME (Kueue's default c1f6bfd2.kueue.x-k8s.io keeps kuota's own, "
        "kuota-operator: kuota recognises a running Kueue by that Lease)"),
    "leaderElection.resourceNamespace": Honoured("--lease's NAMESPACE"),
    "metrics.bindAddress": Honoured(
        "--probes, which serves /metrics (over HTTP) beside /healthz and /readyz: refused "
        "when health.healthProbeBindAddress names another address"),
    "metrics.enableClusterQueueResources": Honoured(
        "true: kuota always reports the ClusterQueue quota and usage metrics; false is "
        "refused"),
    "health.healthProbeBindAddress": Honoured("--probes"),
    "health.readinessEndpointName": Honoured("readyz only (kuota's path)"),
    "health.livenessEndpointName": Honoured("healthz only (kuota's path)"),
    "pprofBindAddress": Honoured("\"\" or \"0\" only (kuota serves no pprof)"),
    "controller.groupKindConcurrency": Refused(
        "kuota handles watch events one at a time on one loop, with "
        "its writes bounded in number, not per kind"),
    "controller.cacheSyncTimeout": Refused("kuota lists every watched resource before it "
                                           "leads, without a timeout"),
}

_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class ConfigError(ValueError):
    """The file cannot be used; ``problems`` name each field (``path: what``)."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(f"{source}: " + "; ".join(problems))


@dataclass(frozen=True)
class KueueSettings:
    """What a Kueue Configuration asks of the operator.

    ``flags``: values for ``kuota operator``'s flags (by argparse ``dest``), used where the
    command line does not give the flag. The rest have no flag of their own.
    """

    flags: Mapping[str, Any] = field(default_factory=dict)
    #: waitForPodsReady's settings besides the timeout (which is ``flags``'s).
    pods_ready: PodsReadyConfig | None = None
    lease_duration: float | None = None
    lease_renew: float | None = None
    #: Kinds queued (kuota's kind names); None: the file did not restrict them.
    frameworks: frozenset[str] | None = None
    #: Namespaces whose pod-based objects are queued (managedJobsNamespaceSelector).
    pod_namespaces: LabelSelector | None = None


def load(path: str | pathlib.Path) -> KueueSettings:
    """Read and translate the file at ``path``; :class:`ConfigError` names the file."""
    source = str(path)
    try:
        text = yaml_input.read_file(path)
    except OSError as exc:
        raise ConfigError(source, [f"cannot be read: {exc.strerror or exc}"]) from None
    except yaml_input.InputLimitError as exc:
        raise ConfigError(source, [str(exc)]) from None
    return parse(text, source=source)


def parse(text: str, *, source: str = "<config>") -> KueueSettings:
    """Translate a Configuration document; :class:`ConfigError` lists every problem."""
    try:
        doc = yaml_input.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(source, [f"not YAML: {exc}"]) from None
    except yaml_input.InputLimitError as exc:
        raise ConfigError(source, [str(exc)]) from None
    if not isinstance(doc, dict):
        raise ConfigError(source, ["expected a Configuration (a YAML mapping)"])
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    group, _, version = str(api_version or "").rpartition("/")
    if group != GROUP or version not in VERSIONS or kind != "Configuration":
        raise ConfigError(source, [
            f"apiVersion/kind: expected Configuration of {GROUP}/{' or '.join(VERSIONS)}, "
            f"got {api_version}/{kind}"])
    body = {k: v for k, v in doc.items() if k not in ("apiVersion", "kind")}
    problems: list[str] = []
    values: dict[str, Any] = {}
    for path, rule_path, value in _leaves(body, "", version, problems):
        rule = FIELDS[rule_path]
        if isinstance(rule, Refused):
            problems.append(f"{path}: not supported by kuota: {rule.why}")
        else:
            values[rule_path] = value
    translation = _Translation(version, values, problems)
    settings = translation.settings()
    if problems:
        raise ConfigError(source, problems)
    return settings


def _said(value: Any) -> bool:
    """Whether a value says anything (Go's ``omitempty``: null, [], {} do not)."""
    return value is not None and value != [] and value != {}


def _leaves(node: Mapping[str, Any], prefix: str, version: str,
            problems: list[str]) -> Iterator[tuple[str, str, Any]]:
    """(path as written, :data:`FIELDS` key, value) of every field the document sets;
    unknown fields and wrong shapes go to ``problems``."""
    rule_prefix = re.sub(r"\[\d+\]", "[]", prefix)
    for key, value in node.items():
        path, rule_path = f"{prefix}{key}", f"{rule_prefix}{key}"
        rule = FIELDS.get(rule_path)
        if rule is not None:
            if version not in rule.versions:
                problems.append(f"{path}: unknown field in {GROUP}/{version}")
            elif _said(value):
                yield path, rule_path, value
            continue
        below = {v for f, r in FIELDS.items() if f.startswith((rule_path + ".", rule_path + "[]."))
                 for v in r.versions}
        if below and version not in below:
            problems.append(f"{path}: unknown field in {GROUP}/{version}")
        elif any(f.startswith(rule_path + ".") for f in FIELDS):
            if isinstance(value, dict):
                yield from _leaves(value, path + ".", version, problems)
            elif _said(value):
                problems.append(f"{path}: expected a mapping")
        elif any(f.startswith(rule_path + "[].") for f in FIELDS):
            if isinstance(value, list) and all(isinstance(v, dict) for v in value):
                for index, item in enumerate(value):
                    yield from _leaves(item, f"{path}[{index}].", version, problems)
            elif _said(value):
                problems.append(f"{path}: expected a list of mappings")
        else:
            problems.append(f"{path}: unknown field in {GROUP}/{version}")


def duration(text: Any) -> float:
    """Seconds of a Go duration (``90s``, ``1h30m``, ``0``); ValueError otherwise."""
    value = str(text).strip()
    sign, body = (-1.0, value[1:]) if value.startswith("-") else (1.0, value.lstrip("+"))
    if body == "0":
        return 0.0
    parts = list(_DURATION.finditer(body))
    if not body or "".join(p.group(0) for p in parts) != body:
        raise ValueError(f"expected a duration such as 90s, 5m or 1h30m, got {text!r}")
    return sign * sum(float(p.group(1)) * _UNITS[p.group(2)] for p in parts)


def _address(text: Any) -> tuple[str, int]:
    """``HOST:PORT`` / ``:PORT`` (all addresses) as kuota's flags take it."""
    host, _, port = str(text).rpartition(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"expected HOST:PORT or :PORT, got {text!r}")
    return host or "0.0.0.0", int(port)


class _Translation:
    """The honoured fields turned into settings; problems appended as found."""

    def __init__(self, version: str, values: Mapping[str, Any], problems: list[str]) -> None:
        self.v1 = version == "v1beta1"
        self.values = values
        self.problems = problems
        self.flags: dict[str, Any] = {}

    def get(self, path: str, kind: type, default: Any = None) -> Any:
        """The field's value if the file sets it and it is a ``kind``, else ``default``
        (a value of another type is a problem)."""
        value = self.values.get(path)
        if value is None:
            return default
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            self.problems.append(f"{path}: expected {kind.__name__}, got {value!r}")
            return default
        return value

    def seconds(self, path: str) -> float | None:
        value = self.values.get(path)
        if value is None:
            return None
        try:
            seconds = duration(value)
        except ValueError as exc:
            self.problems.append(f"{path}: {exc}")
            return None
        if seconds < 0:
            self.problems.append(f"{path}: must not be negative, got {value!r}")
            return None
        return seconds

    def refuse(self, path: str, why: str) -> None:
        self.problems.append(f"{path}: {why}")

    def settings(self) -> KueueSettings:
        namespace = self.get("namespace", str)
        if namespace:
            self.flags["operator_namespace"] = namespace
        if self.get("manageJobsWithoutQueueName", bool) is True:
            self.refuse("manageJobsWithoutQueueName", "true is not supported by kuota: it "
                        "does not hold objects without a queue label suspended (with the "
                        "feature gate LocalQueueDefaulting, on by default, they go to their "
                        "namespace's LocalQueue 'default' when it exists)")
        self._feature_gates()
        self._queueing()
        self._certificates()
        self._servers()
        frameworks = self._frameworks()
        lease_duration, lease_renew = self._lease(namespace)
        return KueueSettings(
            flags=self.flags, pods_ready=self._pods_ready(), lease_duration=lease_duration,
            lease_renew=lease_renew, frameworks=frameworks,
            pod_namespaces=self._pod_namespaces(frameworks, namespace))

    def _feature_gates(self) -> None:
        gates = self.get("featureGates", dict, {})
        for name, on in gates.items():
            if name != LOCAL_QUEUE_DEFAULTING:
                self.refuse(f"featureGates.{name}", "not supported by kuota (it knows "
                            f"{LOCAL_QUEUE_DEFAULTING} only)")
            elif not isinstance(on, bool):
                self.refuse(f"featureGates.{name}", f"expected true or false, got {on!r}")
        self.flags["default_queue"] = gates.get(LOCAL_QUEUE_DEFAULTING, True) is not False

    def _queueing(self) -> None:
        if self.get("multiKueue.origin", str):
            self.flags["manager_id"] = self.values["multiKueue.origin"]
        fair = self.values.get("fairSharing.preemptionStrategies")
        enabled = self.get("fairSharing.enable", bool) if self.v1 else fair is not None
        if enabled:
            if fair is not None and list(fair) != FAIR_STRATEGIES:
                self.refuse("fairSharing.preemptionStrategies",
                            f"kuota applies {FAIR_STRATEGIES} only, got {fair!r}")
            self.flags["fair_sharing"] = True

    def _certificates(self) -> None:
        if self.get("internalCertManagement.enable", bool) is True:
            self.refuse("internalCertManagement.enable", "true is not supported by kuota: "
                        + _CERTS + " (set enable: false)")

    def _servers(self) -> None:
        port, host = self.get("webhook.port", int), self.get("webhook.host", str)
        if port is not None or host:
            self.flags["webhook_listen"] = (host or "0.0.0.0", port or DEFAULT_WEBHOOK_PORT)
        if self.get("webhook.certDir", str):
            self.flags["webhook_cert_dir"] = pathlib.Path(self.values["webhook.certDir"])
        probes = self._bind("health.healthProbeBindAddress")
        metrics = self._bind("metrics.bindAddress")
        if metrics is not None and probes is not None and metrics != probes:
            self.refuse("metrics.bindAddress", "kuota serves /metrics beside the health "
                        "probes, at health.healthProbeBindAddress: give the same address")
        if (probes or metrics) is not None:
            self.flags["probes"] = probes or metrics
        if self.get("metrics.enableClusterQueueResources", bool) is False:
            self.refuse("metrics.enableClusterQueueResources",
                        "false is not supported by kuota: it always reports them")
        for path, name in (("health.readinessEndpointName", "readyz"),
                           ("health.livenessEndpointName", "healthz")):
            if self.get(path, str) not in (None, "", name):
                self.refuse(path, f"kuota serves /{name} only")
        if self.get("pprofBindAddress", str) not in (None, "", "0"):
            self.refuse("pprofBindAddress", "kuota serves no pprof (give \"\" or \"0\")")

    def _bind(self, path: str) -> tuple[str, int] | None:
        text = self.get(path, str)
        if text in (None, "", "0"):
            if text == "0" and path == "metrics.bindAddress":
                self.refuse(path, "kuota cannot turn /metrics off apart from the probes")
            return None
        try:
            return _address(text)
        except ValueError as exc:
            self.refuse(path, str(exc))
            return None

    def _frameworks(self) -> frozenset[str]:
        names = self.get("integrations.frameworks", list, []) or ["batch/job"]
        kinds: set[str] = set()
        for index, name in enumerate(names):
            path = f"integrations.frameworks[{index}]"
            if name in UNQUEUED_FRAMEWORKS:
                self.refuse(path, f"{name} is not queued by kuota")
            elif name not in FRAMEWORKS:
                self.refuse(path, f"unknown framework {name!r}; Kueue's names: "
                            + ", ".join(sorted(FRAMEWORKS)))
            elif FRAMEWORKS[name] in kinds:
                self.refuse(path, f"{name} is listed twice")
            else:
                kinds.add(FRAMEWORKS[name])
        return frozenset(kinds)

    def _lease(self, namespace: str | None) -> tuple[float | None, float | None]:
        elect = self.get("leaderElection.leaderElect", bool)
        lock = self.get("leaderElection.resourceLock", str)
        if lock not in (None, "", "leases"):
            self.refuse("leaderElection.resourceLock", f"kuota elects with leases only, "
                        f"got {lock!r}")
        name = self.get("leaderElection.resourceName", str)
        lease_ns = self.get("leaderElection.resourceNamespace", str) or namespace
        if elect is False:
            self.flags["lease"] = "none"
        elif (name and name != KUEUE_LEASE) or lease_ns:
            kept = name if name and name != KUEUE_LEASE else "kuota-operator"
            self.flags["lease"] = f"{lease_ns or 'kuota-system'}/{kept}"
        duration_s = self.seconds("leaderElection.leaseDuration")
        renew = self.seconds("leaderElection.retryPeriod")
        if duration_s == 0 or renew == 0:
            self.refuse("leaderElection.leaseDuration" if duration_s == 0 else
                        "leaderElection.retryPeriod", "must be > 0")
            return None, None
        if duration_s is not None and renew is not None and renew >= duration_s:
            self.refuse("leaderElection.retryPeriod", "must be shorter than leaseDuration")
        return duration_s, renew

    def _pods_ready(self) -> PodsReadyConfig | None:
        prefix = "waitForPodsReady."
        present = any(p.startswith(prefix) for p in self.values)
        if not (self.get(prefix + "enable", bool) if self.v1 else present):
            return None
        timeout = self.seconds(prefix + "timeout")
        if timeout is None:
            if not self.v1:
                self.refuse(prefix + "timeout", "must be specified")
            timeout = DEFAULT_PODS_READY_TIMEOUT
        elif timeout == 0:
            self.refuse(prefix + "timeout", "must be > 0")
        self.flags["pods_ready_timeout"] = timeout
        # v1beta1 blocks admission unless told not to (what its conversion does).
        block = self.get(prefix + "blockAdmission", bool, self.v1)
        strategy = prefix + "requeuingStrategy."
        stamp = self.get(strategy + "timestamp", str, "Eviction")
        if stamp not in ("Eviction", "Creation"):
            self.refuse(strategy + "timestamp", f"expected Eviction or Creation, got {stamp!r}")
        counts: dict[str, int | None] = {}
        for name, default in (("backoffLimitCount", None), ("backoffBaseSeconds", 60),
                              ("backoffMaxSeconds", 3600)):  # (Kueue's defaults)
            counts[name] = self.get(strategy + name, int, default)
            if (counts[name] or 0) < 0:
                self.refuse(strategy + name, f"must not be negative, got {counts[name]}")
        requeuing = RequeuingStrategy(
            timestamp=stamp, backoff_limit_count=counts["backoffLimitCount"],
            backoff_base_seconds=float(counts["backoffBaseSeconds"] or 0),
            backoff_max_seconds=float(counts["backoffMaxSeconds"] or 0))
        return PodsReadyConfig(timeout=timeout, block_admission=block, requeuing=requeuing)

    def _pod_namespaces(self, frameworks: frozenset[str],
                        namespace: str | None) -> LabelSelector | None:
        path = "managedJobsNamespaceSelector"
        raw = self.values.get(path)
        selector: LabelSelector | None = None
        if raw is not None:
            try:
                selector = LabelSelector.model_validate(raw)
            except pydantic.ValidationError as exc:
                for error in exc.errors():
                    where = ".".join(str(p) for p in error["loc"])
                    self.refuse(f"{path}.{where}" if where else path, error["msg"])
                return None
        if not frameworks & POD_KINDS:
            return None  # (no pod-based kind: the selector only modulates what is refused)
        own = namespace or "kuota-system"
        if selector is None:
            return LabelSelector.model_validate({"matchExpressions": [{
                "key": NAMESPACE_NAME_LABEL, "operator": "NotIn",
                "values": ["kube-system", own]}]})
        for system in ("kube-system", own):
            if selector.matches({NAMESPACE_NAME_LABEL: system}):
                self.refuse(path, f"must not match the {system!r} namespace with a pod-based "
                            "framework")
        return selector
