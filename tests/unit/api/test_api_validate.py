"""``kuota validate`` and the YAML loader: one line per problem, exit 2; objects counted."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from api_builders import edit, valid

from kuota import cli
from quota import api


def write(path: Path, *docs: object) -> Path:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], list[str]]:
    status = cli.main(["validate", *args])
    out, err = capsys.readouterr()
    return status, out.splitlines(), err.splitlines()


def test_valid_files_exit_0_and_count_objects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write(
        tmp_path / "queues.yaml",
        valid("ResourceFlavor"),
        valid("ClusterQueue"),
        valid("LocalQueue"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
    )
    b = write(tmp_path / "more.yml", valid("Workload"))
    assert run(capsys, str(a), str(b)) == (0, ["5 objects OK"], [])


def test_directories_stand_for_their_yaml_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub" / "a.yaml", valid("Cohort"))
    write(tmp_path / "b.yaml", valid("Topology"), valid("AdmissionCheck"))
    (tmp_path / "notes.txt").write_text("not yaml: [", encoding="utf-8")
    assert run(capsys, str(tmp_path)) == (0, ["3 objects OK"], [])


def test_each_problem_is_one_line_naming_file_object_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad_cq = edit(
        valid("ClusterQueue"),
        {"spec.resourceGroups[0].flavors[1].resources": [{"name": "cpu", "nominalQuota": 1}]},
    )
    bad_lq = edit(valid("LocalQueue"), {"spec.stopPolicy": "Pause"})
    path = write(tmp_path / "x.yaml", valid("ResourceFlavor"), bad_cq, bad_lq)
    status, out, err = run(capsys, str(path))
    assert status == 2
    assert out == [
        f"{path}: ClusterQueue team-a: spec.resourceGroups[0].flavors[1].resources: must list "
        "exactly the covered resources cpu, memory in that order (got cpu)",
        f"{path}: LocalQueue main: spec.stopPolicy: must be 'None', 'Hold' or 'HoldAndDrain' "
        "(got 'Pause')",
    ]
    assert err == ["2 problem(s)"]


@pytest.mark.parametrize(
    ("content", "want"),
    [
        ("kind: [unclosed", "not valid YAML"),
        ("- just\n- a list\n", "expected an object (a mapping), got list"),
        (
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: Team}\n",
            "Namespace Team: metadata.name",
        ),
        ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n", "kind: unknown kind 'Job'"),
    ],
)
def test_malformed_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, want: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content, encoding="utf-8")
    status, out, _ = run(capsys, str(path))
    assert status == 2
    assert len(out) == 1 and out[0].startswith(f"{path}: ") and want in out[0]


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, str(tmp_path / "nope.yaml"))
    assert (status, out) == (2, [f"{tmp_path}/nope.yaml: no such file"])


def test_load_objects_reads_text_lists_and_skips_empty_documents() -> None:
    text = yaml.safe_dump_all(
        [
            valid("Cohort"),
            None,
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [valid("ResourceFlavor"), valid("Topology")],
            },
        ]
    )
    objects = api.load_objects(text)
    assert [type(o).__name__ for o in objects] == ["Cohort", "ResourceFlavor", "Topology"]


def test_load_objects_collects_problems_from_every_document(tmp_path: Path) -> None:
    path = write(
        tmp_path / "two.yaml",
        edit(valid("Cohort"), {"spec.parentName": "research"}),
        edit(valid("Topology"), {"spec.levels": []}),
    )
    with pytest.raises(api.ObjectError) as info:
        api.load_objects(path)
    assert [(p.source, p.kind, p.name, p.field) for p in info.value.problems] == [
        (str(path), "Cohort", "research", "spec.parentName"),
        (str(path), "Topology", "default", "spec.levels"),
    ]


SCENARIO = {
    "objects": [
        valid("ResourceFlavor") | {"metadata": {"name": "on-demand"}, "spec": {}},
        edit(
            valid("ClusterQueue"),
            {
                "spec.resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": "on-demand", "resources": [{"name": "cpu", "nominalQuota": 4}]}
                        ],
                    }
                ],
                "spec.admissionChecksStrategy": None,
            },
        ),
        valid("LocalQueue"),
    ],
    "workloads": [
        {
            "name": "w1",
            "namespace": "team-a",
            "queueName": "main",
            "arrival": 0,
            "duration": 10,
            "podSets": [{"name": "main", "count": 2, "requests": {"cpu": "1"}}],
        }
    ],
}


def test_scenarios_are_checked_by_the_scenario_loader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("kuota.scenario")
    good = write(tmp_path / "good.yaml", SCENARIO)
    assert run(capsys, str(good)) == (0, ["4 objects OK"], [])
    broken = dict(
        SCENARIO,
        objects=[
            *SCENARIO["objects"][:1],
            edit(SCENARIO["objects"][1], {"spec.queueingStrategy": "X"}),
            *SCENARIO["objects"][2:],
        ],
    )
    bad = write(tmp_path / "bad.yaml", broken)
    status, out, _ = run(capsys, str(bad))
    assert status == 2
    assert len(out) == 1
    assert out[0].startswith(f"{bad}") and "ClusterQueue team-a: spec.queueingStrategy" in out[0]


class TestConvert:
    """``validate --to``: Kueue's manifests as kuota's and back, once they are valid."""

    V1BETA1_QUEUE = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
                     "metadata": {"name": "cq"},
                     "spec": {"cohort": "all", "namespaceSelector": {}}}

    @pytest.mark.parametrize(("to", "want_api", "want_spec"), [
        ("kuota.dev/v1alpha1", "kuota.dev/v1alpha1", {"cohortName": "all"}),
        ("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta2", {"cohortName": "all"}),
        ("kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta1", {"cohort": "all"}),
    ])
    def test_manifests_are_written_in_the_version_asked_for(
            self, tmp_path: Path, capsys: pytest.CaptureFixture[str], to: str, want_api: str,
            want_spec: dict[str, str]) -> None:
        path = write(tmp_path / "q.yaml", self.V1BETA1_QUEUE,
                     {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}})
        status = cli.main(["validate", "--to", to, str(path)])
        out, err = capsys.readouterr()
        assert status == 0
        queue, namespace = list(yaml.safe_load_all(out))
        assert queue["apiVersion"] == want_api
        assert {k: queue["spec"][k] for k in want_spec} == want_spec
        assert namespace["kind"] == "Namespace"
        assert err.strip() == f"2 objects OK, written as {to}"
        # What is written reads back as the same object.
        assert api.parse_object(queue, source="") == api.parse_object(self.V1BETA1_QUEUE,
                                                                     source="")

    def test_nothing_is_written_when_a_file_has_a_problem(
            self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        bad = {**self.V1BETA1_QUEUE, "spec": {"cohort": "a", "cohortName": "b"}}
        status, out, _ = run(capsys, "--to", "kuota.dev/v1alpha1",
                             str(write(tmp_path / "q.yaml", bad)))
        assert status == 2
        assert any("spec.cohort: conflicts with spec.cohortName" in line for line in out)
        assert not any(line.startswith("apiVersion") for line in out)

    def test_a_scenario_is_not_converted(
            self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        path = tmp_path / "s.yaml"
        path.write_text("objects: []\nworkloads: []\n")
        status, out, _ = run(capsys, "--to", "kuota.dev/v1alpha1", str(path))
        assert status == 2
        assert "converts manifests only" in out[0]
