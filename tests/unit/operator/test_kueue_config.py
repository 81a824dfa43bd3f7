"""``kuota operator --config FILE``: Kueue's Configuration, every field honoured or refused.

The committed list ``data/kueue_v0.15_configuration_fields.txt`` holds every field path
of Kueue v0.15's Configuration (both versions), read from Kueue's Go types. Each must be
in :data:`kuota.operator.kueue_config.FIELDS` for the same versions; each refused field
is refused by name when a file sets it; each honoured one has a case below showing what
it changes in the operator's options.
"""

from __future__ import annotations

import argparse
import pathlib
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml

from kuota import cli
from kuota.cli import build_parser
from kuota.commands.operator import options_from, with_config
from kuota.operator import kueue_config
from kuota.operator.kueue_config import FIELDS, ConfigError, Honoured, Refused
from kuota.operator.settings import Options
from tests.yaml_bombs import laughs

FIELD_LIST = pathlib.Path(__file__).parent / "data" / "kueue_v0.15_configuration_fields.txt"
REPO = pathlib.Path(__file__).parents[3]


def _listed() -> dict[str, frozenset[str]]:
    rows = [line.split() for line in FIELD_LIST.read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    return {row[0]: frozenset(row[1:]) for row in rows}


def _write(tmp: pathlib.Path, body: dict[str, Any], version: str = "v1beta2") -> pathlib.Path:
    path = tmp / "kueue-config.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": f"config.kueue.x-k8s.io/{version}",
                                    "kind": "Configuration", **body}, sort_keys=False))
    return path


def _run(tmp: pathlib.Path, body: dict[str, Any], *flags: str,
         version: str = "v1beta2") -> tuple[Options, argparse.Namespace]:
    path = _write(tmp, body, version)
    args = build_parser().parse_args(["operator", "--config", str(path), *flags])
    settings = kueue_config.load(args.config)
    return options_from(args, settings), with_config(args, settings)


def _get(options: Options, args: argparse.Namespace, dotted: str) -> Any:
    obj: Any = args if dotted.startswith("args.") else options
    for name in dotted.removeprefix("args.").split("."):
        obj = obj[name] if isinstance(obj, dict) else getattr(obj, name)
    return obj


def _nest(path: str, value: Any) -> dict[str, Any]:
    """``{"a": {"b": [{"c": value}]}}`` for ``a.b[].c``."""
    head, _, rest = path.partition(".")
    if head.endswith("[]"):
        return {head[:-2]: [_nest(rest, value)]}
    return {head: _nest(rest, value) if rest else value}


def test_the_committed_field_list_is_the_table() -> None:
    listed = _listed()
    assert set(listed) == set(FIELDS), "fields listed but not in the table, or the reverse"
    assert {p: v for p, v in listed.items() if FIELDS[p].versions != v} == {}


# -- refused: every Refused field, set to anything, is an error naming it ---------------------
REFUSED = sorted(p for p, rule in FIELDS.items() if isinstance(rule, Refused))


@pytest.mark.parametrize("path", REFUSED)
def test_a_refused_field_is_an_error_naming_it(path: str, tmp_path: pathlib.Path) -> None:
    version = "v1beta2" if "v1beta2" in FIELDS[path].versions else "v1beta1"
    with pytest.raises(ConfigError) as raised:
        _run(tmp_path, _nest(path, "1"), version=version)
    want = path.replace("[]", "[0]")
    assert any(p.startswith(f"{want}: not supported by kuota") for p in raised.value.problems)
    assert str(tmp_path / "kueue-config.yaml") in str(raised.value)


# -- honoured: each field changes the options (or the flags' values) --------------------------
@dataclass
class Case:
    name: str
    body: dict[str, Any]
    want: dict[str, Any]
    version: str = "v1beta2"
    flags: list[str] = field(default_factory=list)


HONOURED = [
    Case("namespace", {"namespace": "queues"},
         {"operator_namespace": "queues", "lease_namespace": "queues",
          "lease_name": "kuota-operator"}),
    Case("manageJobsWithoutQueueName", {"manageJobsWithoutQueueName": False},
         {"default_queue": True}),
    Case("managedJobsNamespaceSelector",
         {"integrations": {"frameworks": ["pod"]},
          "managedJobsNamespaceSelector": {"matchLabels": {"team": "ml"}}},
         {"pod_namespaces.match_labels": {"team": "ml"}}),
    Case("internalCertManagement.enable", {"internalCertManagement": {"enable": False}},
         {"args.webhook_listen": None}),
    Case("waitForPodsReady.enable", {"waitForPodsReady": {"enable": True}},
         {"engine.wait_for_pods_ready.timeout": 300.0,
          "engine.wait_for_pods_ready.block_admission": True}, version="v1beta1"),
    Case("waitForPodsReady.timeout", {"waitForPodsReady": {"timeout": "2m30s"}},
         {"engine.wait_for_pods_ready.timeout": 150.0,
          "engine.wait_for_pods_ready.block_admission": False}),
    Case("waitForPodsReady.blockAdmission",
         {"waitForPodsReady": {"timeout": "1m", "blockAdmission": True}},
         {"engine.wait_for_pods_ready.block_admission": True}),
    Case("waitForPodsReady.requeuingStrategy.timestamp",
         {"waitForPodsReady": {"timeout": "1m", "requeuingStrategy": {"timestamp": "Creation"}}},
         {"engine.wait_for_pods_ready.requeuing.timestamp": "Creation"}),
    Case("waitForPodsReady.requeuingStrategy.backoffLimitCount",
         {"waitForPodsReady": {"timeout": "1m",
                               "requeuingStrategy": {"backoffLimitCount": 3}}},
         {"engine.wait_for_pods_ready.requeuing.backoff_limit_count": 3}),
    Case("waitForPodsReady.requeuingStrategy.backoffBaseSeconds",
         {"waitForPodsReady": {"timeout": "1m",
                               "requeuingStrategy": {"backoffBaseSeconds": 5}}},
         {"engine.wait_for_pods_ready.requeuing.backoff_base_seconds": 5.0}),
    Case("waitForPodsReady.requeuingStrategy.backoffMaxSeconds",
         {"waitForPodsReady": {"timeout": "1m",
                               "requeuingStrategy": {"backoffMaxSeconds": 120}}},
         {"engine.wait_for_pods_ready.requeuing.backoff_max_seconds": 120.0}),
    Case("integrations.frameworks",
         {"integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset", "pod"]}},
         {"frameworks": frozenset({"Job", "JobSet", "Pod"})}),
    Case("multiKueue.origin", {"multiKueue": {"origin": "hub-1"}}, {"manager_id": "hub-1"}),
    Case("fairSharing.enable", {"fairSharing": {"enable": True}},
         {"engine.fair_sharing": True}, version="v1beta1"),
    Case("fairSharing.preemptionStrategies",
         {"fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare",
                                                   "LessThanInitialShare"]}},
         {"engine.fair_sharing": True}),
    Case("featureGates", {"featureGates": {"LocalQueueDefaulting": False}},
         {"default_queue": False}),
    Case("webhook.port", {"webhook": {"port": 9444}},
         {"args.webhook_listen": ("0.0.0.0", 9444)}),
    Case("webhook.host", {"webhook": {"host": "10.0.0.5"}},
         {"args.webhook_listen": ("10.0.0.5", 9443)}),
    Case("webhook.certDir", {"webhook": {"certDir": "/certs"}},
         {"args.webhook_cert_dir": pathlib.Path("/certs")}),
    Case("leaderElection.leaderElect", {"leaderElection": {"leaderElect": False}},
         {"lease_name": None}),
    Case("leaderElection.leaseDuration", {"leaderElection": {"leaseDuration": "30s"}},
         {"lease_duration": 30.0}),
    Case("leaderElection.retryPeriod", {"leaderElection": {"retryPeriod": "2s"}},
         {"lease_renew": 2.0}),
    Case("leaderElection.resourceLock",
         {"leaderElection": {"resourceLock": "leases", "resourceName": "q"}},
         {"lease_name": "q"}),
    Case("leaderElection.resourceName", {"leaderElection": {"resourceName": "kuota-hub"}},
         {"lease_name": "kuota-hub", "lease_namespace": "kuota-system"}),
    Case("leaderElection.resourceName is Kueue's",
         {"leaderElection": {"resourceName": "c1f6bfd2.kueue.x-k8s.io"}},
         {"lease_name": "kuota-operator"}),
    Case("leaderElection.resourceNamespace",
         {"leaderElection": {"resourceNamespace": "ops"}},
         {"lease_name": "kuota-operator", "lease_namespace": "ops"}),
    Case("metrics.bindAddress", {"metrics": {"bindAddress": ":8443"}},
         {"args.probes": ("0.0.0.0", 8443)}),
    Case("metrics.enableClusterQueueResources",
         {"metrics": {"enableClusterQueueResources": True}}, {"args.probes": None}),
    Case("health.healthProbeBindAddress",
         {"health": {"healthProbeBindAddress": "127.0.0.1:8081"},
          "metrics": {"bindAddress": "127.0.0.1:8081"}},
         {"args.probes": ("127.0.0.1", 8081)}),
    Case("health.readinessEndpointName", {"health": {"readinessEndpointName": "readyz"}},
         {"args.probes": None}),
    Case("health.livenessEndpointName", {"health": {"livenessEndpointName": "healthz"}},
         {"args.probes": None}),
    Case("pprofBindAddress", {"pprofBindAddress": "0"}, {"args.probes": None}),
]


@pytest.mark.parametrize("case", HONOURED, ids=lambda c: c.name)
def test_an_honoured_field_changes_the_options(case: Case, tmp_path: pathlib.Path) -> None:
    options, args = _run(tmp_path, case.body, *case.flags, version=case.version)
    got = {key: _get(options, args, key) for key in case.want}
    assert got == case.want


def test_every_honoured_field_has_a_case() -> None:
    honoured = {p for p, rule in FIELDS.items() if isinstance(rule, Honoured)}
    assert honoured - {c.name for c in HONOURED} == set()


def test_a_file_setting_nothing_is_kueues_defaults(tmp_path: pathlib.Path) -> None:
    """No file: every kind, no default queue. An empty file: Kueue's defaults — Jobs only,
    LocalQueueDefaulting on; the rest as without a file."""
    options, _ = _run(tmp_path, {})
    plain = options_from(build_parser().parse_args(["operator"]))
    assert (plain.frameworks, plain.default_queue) == (None, False)
    assert (options.frameworks, options.default_queue) == (frozenset({"Job"}), True)
    assert (options.lease_name, options.lease_namespace, options.manager_id,
            options.engine) == (plain.lease_name, plain.lease_namespace, plain.manager_id,
                                plain.engine)


# -- values kuota refuses in an honoured field, and shapes Kueue refuses ----------------------
@dataclass
class Bad:
    name: str
    body: dict[str, Any]
    want_error: str
    version: str = "v1beta2"


BAD = [
    Bad("manage without queue name", {"manageJobsWithoutQueueName": True},
        "manageJobsWithoutQueueName: true is not supported by kuota"),
    Bad("selector matching kube-system", {
        "integrations": {"frameworks": ["pod"]},
        "managedJobsNamespaceSelector": {"matchLabels": {}}},
        "managedJobsNamespaceSelector: must not match the 'kube-system' namespace"),
    Bad("bad selector", {"managedJobsNamespaceSelector": {"matchExpressions": [
        {"key": "team", "operator": "Near"}]}}, "managedJobsNamespaceSelector.matchExpressions"),
    Bad("internal certificates", {"internalCertManagement": {"enable": True}},
        "internalCertManagement.enable: true is not supported by kuota"),
    Bad("timeout missing in v1beta2", {"waitForPodsReady": {"blockAdmission": True}},
        "waitForPodsReady.timeout: must be specified"),
    Bad("timeout not a duration", {"waitForPodsReady": {"timeout": "soon"}},
        "waitForPodsReady.timeout: expected a duration"),
    Bad("bad timestamp", {"waitForPodsReady": {"timeout": "1m", "requeuingStrategy": {
        "timestamp": "Admission"}}}, "requeuingStrategy.timestamp: expected Eviction or Creation"),
    Bad("negative backoff", {"waitForPodsReady": {"timeout": "1m", "requeuingStrategy": {
        "backoffLimitCount": -1}}}, "backoffLimitCount: must not be negative"),
    Bad("appwrapper", {"integrations": {"frameworks": ["batch/job",
                                                       "workload.codeflare.dev/appwrapper"]}},
        "integrations.frameworks[1]: workload.codeflare.dev/appwrapper is not queued by kuota"),
    Bad("unknown framework", {"integrations": {"frameworks": ["batch/cronjob"]}},
        "integrations.frameworks[0]: unknown framework 'batch/cronjob'"),
    Bad("framework twice", {"integrations": {"frameworks": ["pod", "pod"]}},
        "integrations.frameworks[1]: pod is listed twice"),
    Bad("one preemption strategy", {"fairSharing": {"preemptionStrategies": [
        "LessThanInitialShare"]}}, "fairSharing.preemptionStrategies: kuota applies"),
    Bad("another feature gate", {"featureGates": {"TopologyAwareScheduling": True}},
        "featureGates.TopologyAwareScheduling: not supported by kuota"),
    Bad("webhook port not a number", {"webhook": {"port": "9443"}},
        "webhook.port: expected int"),
    Bad("endpoints lock", {"leaderElection": {"resourceLock": "endpointsleases"}},
        "leaderElection.resourceLock: kuota elects with leases only"),
    Bad("retry longer than lease", {"leaderElection": {"leaseDuration": "5s",
                                                       "retryPeriod": "10s"}},
        "leaderElection.retryPeriod: must be shorter than leaseDuration"),
    Bad("metrics apart from probes", {"metrics": {"bindAddress": ":8443"},
                                      "health": {"healthProbeBindAddress": ":8081"}},
        "metrics.bindAddress: kuota serves /metrics beside the health probes"),
    Bad("metrics off", {"metrics": {"bindAddress": "0"}},
        "metrics.bindAddress: kuota cannot turn /metrics off"),
    Bad("no cluster queue metrics", {"metrics": {"enableClusterQueueResources": False}},
        "metrics.enableClusterQueueResources: false is not supported"),
    Bad("another readiness path", {"health": {"readinessEndpointName": "ready"}},
        "health.readinessEndpointName: kuota serves /readyz only"),
    Bad("another liveness path", {"health": {"livenessEndpointName": "live"}},
        "health.livenessEndpointName: kuota serves /healthz only"),
    Bad("pprof", {"pprofBindAddress": ":8083"}, "pprofBindAddress: kuota serves no pprof"),
    Bad("unknown field", {"waitForPodsReady": {"timeout": "1m", "deadline": "2m"}},
        "waitForPodsReady.deadline: unknown field in config.kueue.x-k8s.io/v1beta2"),
    Bad("v1beta1's field in v1beta2", {"fairSharing": {"enable": True}},
        "fairSharing.enable: unknown field in config.kueue.x-k8s.io/v1beta2"),
    Bad("v1beta2's field in v1beta1", {"multiKueue": {"clusterProfile": {}}},
        "multiKueue.clusterProfile: unknown field", version="v1beta1"),
    Bad("a section not a mapping", {"waitForPodsReady": "5m"},
        "waitForPodsReady: expected a mapping"),
]


@pytest.mark.parametrize("case", BAD, ids=lambda c: c.name)
def test_a_refused_value_is_an_error_naming_the_field(case: Bad,
                                                      tmp_path: pathlib.Path) -> None:
    with pytest.raises(ConfigError) as raised:
        _run(tmp_path, case.body, version=case.version)
    assert case.want_error in str(raised.value)


@pytest.mark.parametrize(("text", "want_error"), [
    ("apiVersion: config.kueue.x-k8s.io/v1alpha1\nkind: Configuration\n",
     "apiVersion/kind: expected Configuration of config.kueue.x-k8s.io/v1beta1 or v1beta2"),
    ("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\n", "apiVersion/kind"),
    ("- a list\n", "expected a Configuration"),
    ("a: [b\n", "not YAML"),
])
def test_a_file_that_is_no_configuration_is_refused(text: str, want_error: str) -> None:
    with pytest.raises(ConfigError) as raised:
        kueue_config.parse(text, source="f.yaml")
    assert want_error in str(raised.value)


def test_every_problem_is_listed_at_once(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ConfigError) as raised:
        _run(tmp_path, {"clientConnection": {"qps": 50, "burst": 100},
                        "manageJobsWithoutQueueName": True})
    assert [p.partition(":")[0] for p in raised.value.problems] == [
        "clientConnection.qps", "clientConnection.burst", "manageJobsWithoutQueueName"]


def test_kueues_shipped_configuration_is_refused_by_its_unsupported_fields(
        tmp_path: pathlib.Path) -> None:
    """Kueue v0.15's config/components/manager/controller_manager_config.yaml, as shipped:
    kuota names the five fields it cannot honour; everything else in it is honoured."""
    shipped = {
        "health": {"healthProbeBindAddress": ":8081"}, "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {"groupKindConcurrency": {"Job.batch": 5, "Pod": 5}},
        "clientConnection": {"qps": 50, "burst": 100},
        "integrations": {"frameworks": ["batch/job", "kubeflow.org/mpijob", "ray.io/rayjob",
                                        "ray.io/raycluster", "jobset.x-k8s.io/jobset",
                                        "kubeflow.org/paddlejob", "kubeflow.org/pytorchjob",
                                        "kubeflow.org/tfjob", "kubeflow.org/xgboostjob",
                                        "kubeflow.org/jaxjob",
                                        "workload.codeflare.dev/appwrapper",
                                        "trainer.kubeflow.org/trainjob"]}}
    with pytest.raises(ConfigError) as raised:
        _run(tmp_path, shipped)
    assert sorted(p.partition(":")[0] for p in raised.value.problems) == [
        "clientConnection.burst", "clientConnection.qps", "controller.groupKindConcurrency",
        "integrations.frameworks[10]", "metrics.bindAddress"]
    kept = dict(shipped, metrics={"bindAddress": ":8081"},
                integrations={"frameworks": shipped["integrations"]["frameworks"][:10]})
    del kept["controller"], kept["clientConnection"]
    options, args = _run(tmp_path, kept)
    assert options.frameworks == frozenset({
        "Job", "MPIJob", "RayJob", "RayCluster", "JobSet", "PaddleJob", "PyTorchJob", "TFJob",
        "XGBoostJob", "JAXJob"})
    assert (args.probes, args.webhook_listen, options.lease_name) == (
        ("0.0.0.0", 8081), ("0.0.0.0", 9443), "kuota-operator")


# -- flags given on the command line win ------------------------------------------------------
FLAGS_WIN = [
    Case("--lease over leaderElection", {"leaderElection": {"resourceName": "from-file"}},
         {"lease_name": "x", "lease_namespace": "ns"}, flags=["--lease", "ns/x"]),
    Case("--lease none over leaderElect", {"leaderElection": {"leaderElect": True,
                                                              "resourceName": "y"}},
         {"lease_name": None}, flags=["--lease", "none"]),
    Case("--pods-ready-timeout over timeout, the rest kept",
         {"waitForPodsReady": {"timeout": "5m", "blockAdmission": True}},
         {"engine.wait_for_pods_ready.timeout": 10.0,
          "engine.wait_for_pods_ready.block_admission": True},
         flags=["--pods-ready-timeout", "10"]),
    Case("--operator-namespace over namespace", {"namespace": "queues"},
         {"operator_namespace": "ops", "lease_namespace": "queues"},
         flags=["--operator-namespace", "ops"]),
    Case("--manager-id over multiKueue.origin", {"multiKueue": {"origin": "hub"}},
         {"manager_id": "me"}, flags=["--manager-id", "me"]),
    Case("--default-queue over LocalQueueDefaulting false",
         {"featureGates": {"LocalQueueDefaulting": False}}, {"default_queue": True},
         flags=["--default-queue"]),
    Case("--fair-sharing without the section", {}, {"engine.fair_sharing": True},
         flags=["--fair-sharing"]),
    Case("--probes over health", {"health": {"healthProbeBindAddress": ":8081"}},
         {"args.probes": ("127.0.0.1", 9000)}, flags=["--probes", "127.0.0.1:9000"]),
    Case("--webhook-listen over webhook.port", {"webhook": {"port": 9443}},
         {"args.webhook_listen": ("127.0.0.1", 9555)},
         flags=["--webhook-listen", "127.0.0.1:9555"]),
    Case("--webhook-secret over webhook.certDir", {"webhook": {"certDir": "/certs"}},
         {"args.webhook_cert_dir": None}, flags=["--webhook-secret", "kuota-system/tls"]),
]


@pytest.mark.parametrize("case", FLAGS_WIN, ids=lambda c: c.name)
def test_flags_win_over_the_file(case: Case, tmp_path: pathlib.Path) -> None:
    options, args = _run(tmp_path, case.body, *case.flags)
    assert {key: _get(options, args, key) for key in case.want} == case.want


# -- the command ---------------------------------------------------------------------------------
def test_a_refused_file_exits_2_naming_file_and_field(
        tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, {"resources": {"excludeResourcePrefixes": ["example.com/"]}})
    assert cli.main(["operator", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"kuota operator: --config {path}: resources.excludeResourcePrefixes: not " \
           "supported by kuota" in err


def test_the_help_says_flags_win(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["operator", "--help"])
    assert "flags given on the command line win over the file" in " ".join(
        capsys.readouterr().out.split())


def test_the_docs_table_names_every_field() -> None:
    doc = (REPO / "docs" / "operator.md").read_text()
    section = doc.partition("## Kueue's Configuration file")[2].partition("\n## ")[0]
    assert section, "docs/operator.md has no section \"Kueue's Configuration file\""
    assert [p for p in FIELDS if f"`{p}`" not in section] == []


@pytest.mark.parametrize(("text", "want"), [
    ("0", 0.0), ("90s", 90.0), ("1h30m", 5400.0), ("1.5h", 5400.0), ("250ms", 0.25),
    ("-2s", -2.0), ("1m0.5s", 60.5),
])
def test_go_durations(text: str, want: float) -> None:
    assert kueue_config.duration(text) == pytest.approx(want)


@pytest.mark.parametrize("text", ["", "5", "5 m", "m", "1d", "1h-2m"])
def test_not_go_durations(text: str) -> None:
    with pytest.raises(ValueError, match="expected a duration"):
        kueue_config.duration(text)


def test_a_yaml_bomb_is_refused_before_it_is_built() -> None:
    text = ("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
            f"featureGates:\n{laughs('  ')}")
    with pytest.raises(ConfigError) as raised:
        kueue_config.parse(text, source="f.yaml")
    assert str(raised.value).startswith("f.yaml: ") and "nodes" in str(raised.value)
