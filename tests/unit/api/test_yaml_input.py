"""User YAML is read within bounds (issue 42, finding 5): a file stops at 3 MiB, an alias
bomb is refused in milliseconds, a recursive alias is refused, and ordinary YAML — anchors
and merge keys included — reads as :func:`yaml.safe_load` reads it.

The bomb once took 81 s of CPU: PyYAML builds it as shared references at once, but
everything after (validation, conversion to JSON) walked it as a tree of 10^9 nodes.
The checks go through the commands that read user YAML without a store (``kuota
validate``, ``kuota simulate``) and the operator's reading of a member's kubeconfig.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from kuota import cli
from kuota.federation.member_view import kubeconfig_spec
from quota import api
from quota.api import yaml_input
from tests.yaml_bombs import BOMB_WORKLOAD, laughs

#: Nothing else takes this long: composing the few dozen nodes before the count passes.
QUICK_CPU_SECONDS = 0.5


def cpu_seconds_of(call: Callable[[], object]) -> float:
    started = time.process_time()
    call()
    return time.process_time() - started


def test_the_bomb_is_about_630_bytes_and_refused_at_once() -> None:
    assert 550 <= len(BOMB_WORKLOAD) <= 700

    def load() -> None:
        with pytest.raises(yaml_input.InputLimitError) as caught:
            yaml_input.safe_load_all(BOMB_WORKLOAD)
        assert str(caught.value).startswith(
            "more than 100,000 YAML nodes (aliases counted as the nodes they stand for)")
    assert cpu_seconds_of(load) < QUICK_CPU_SECONDS


@pytest.mark.parametrize("command", ["validate", "simulate"])
def test_commands_refuse_the_bomb_naming_the_file_with_status_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    path = tmp_path / "lol.yaml"
    path.write_text(BOMB_WORKLOAD if command == "validate" else "objects: []\n" + laughs())
    status: list[int] = []
    took = cpu_seconds_of(lambda: status.append(cli.main([command, str(path)])))
    captured = capsys.readouterr()
    assert status == [2]
    assert f"{path}: " in captured.out + captured.err
    assert "more than 100,000 YAML nodes" in captured.out + captured.err
    assert took < QUICK_CPU_SECONDS


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(yaml_input.InputLimitError) as caught:
        yaml_input.safe_load("spec:\n  loop: &x [1, *x]\n")
    assert str(caught.value) == ("alias *x at line 2 is inside its own anchor (a recursive "
                                 "structure)")


@pytest.mark.parametrize("text", [
    "a: &x {cpu: 1, memory: 2Gi}\nb: *x\nc: [*x, *x]\n",
    "base: &base {cpu: 1}\nmerged:\n  <<: *base\n  memory: 1Gi\n",
    "- a\n- b\n",
    "",
    "just a scalar\n",
])
def test_ordinary_yaml_reads_as_safe_load_reads_it(text: str) -> None:
    assert yaml_input.safe_load(text) == yaml.safe_load(text)
    assert yaml_input.safe_load_all(text + "---\nx: 1\n") == list(
        yaml.safe_load_all(text + "---\nx: 1\n"))


def test_the_node_count_spans_documents_and_counts_plain_nodes_too() -> None:
    doc = "---\n" + "".join(f"k{i}: v\n" for i in range(500))  # 1,001 nodes
    assert len(yaml_input.safe_load_all(doc * 9, max_nodes=10_000)) == 9
    with pytest.raises(yaml_input.InputLimitError, match="more than 10,000 YAML nodes"):
        yaml_input.safe_load_all(doc * 10, max_nodes=10_000)


def test_deep_nesting_is_a_limit_error_not_a_recursion_error() -> None:
    with pytest.raises(yaml_input.InputLimitError, match="nested too deeply"):
        yaml_input.safe_load("[" * 5000 + "]" * 5000)


def test_files_are_read_up_to_the_bound_and_no_further(tmp_path: Path) -> None:
    exact = tmp_path / "exact.yaml"
    exact.write_bytes(b"#" * 1023 + b"\n")
    assert yaml_input.read_file(exact, limit=1024) == "#" * 1023 + "\n"
    over = tmp_path / "over.yaml"
    over.write_bytes(b"#" * 1024 + b"\n")
    with pytest.raises(yaml_input.InputLimitError, match="larger than 1,024 bytes"):
        yaml_input.read_file(over, limit=1024)


def test_an_endless_file_stops_at_the_bound() -> None:
    def read() -> None:
        with pytest.raises(yaml_input.InputLimitError, match="larger than 3,145,728 bytes"):
            yaml_input.read_file("/dev/zero")
    assert cpu_seconds_of(read) < QUICK_CPU_SECONDS


def test_a_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(api.ObjectError) as caught:
        api.read_documents(path)
    assert [str(p) for p in caught.value.problems] == [
        f"{path}: not UTF-8 text: invalid continuation byte at byte 9"]


def test_read_documents_names_the_file_past_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_bytes(b"# padding\n" * (yaml_input.MAX_FILE_BYTES // 10 + 1))
    with pytest.raises(api.ObjectError) as caught:
        api.read_documents(path)
    assert [str(p) for p in caught.value.problems] == [
        f"{path}: larger than 3,145,728 bytes, the most a file may hold (the Kubernetes API "
        "server's request limit)"]


def test_a_member_kubeconfig_bomb_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(laughs() + "apiVersion: v1\nkind: Config\nclusters: *i\n")
    member = api.parse_object({
        "apiVersion": "kuota.dev/v1alpha1", "kind": "MemberCluster",
        "metadata": {"name": "eu"},
        "spec": {"kubeConfig": {"location": str(path), "locationType": "Path"}}})
    assert isinstance(member, api.MemberCluster)
    with pytest.raises(yaml_input.InputLimitError, match="more than 100,000 YAML nodes"):
        asyncio.run(kubeconfig_spec(member, None, "kuota-system"))
