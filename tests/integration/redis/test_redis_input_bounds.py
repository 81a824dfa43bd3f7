"""``kuota submit`` and ``kuota apply`` refuse input past the bounds, with exit status 2,
an error naming the file or the object and field, and nothing stored (issue 42, finding
5): ``-f /dev/zero`` read until memory ran out, a 630-byte alias bomb took 81 s of CPU, a
50 MB manifest was accepted and its pod could never start.

The ``/dev/zero`` runs are child processes under a 2 GiB address-space limit, so a
reader without the bound fails there instead of taking the machine's memory.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from harness import CQ, queues
from test_redis_cli import Kuota

from kuota.client import Client
from kuota.service import runnable
from kuota.service.connection import connect
from quota.api import yaml_input
from tests.yaml_bombs import BOMB_WORKLOAD, laughs

pytestmark = pytest.mark.redis

REPO = Path(__file__).resolve().parents[3]

ADDRESS_SPACE = 2 * 1024 * 1024 * 1024
QUICK_CPU_SECONDS = 0.5


@pytest.fixture
def kuota(redis_server_url: str, redis_prefix: str,
          capsys: pytest.CaptureFixture[str]) -> Kuota:
    return Kuota(redis_server_url, redis_prefix, capsys)


def stored(kuota: Kuota) -> tuple[list[object], dict[str, object]]:
    """The workloads and ClusterQueues in the test's store."""
    url, prefix = kuota.args[1], kuota.args[3]
    client = Client(connection=connect(url, prefix=prefix))
    return list(client.workloads()), dict(client.store.objects.manifests("ClusterQueue"))


def limited_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


@pytest.mark.parametrize("command", ["submit", "apply"])
def test_an_endless_file_is_refused_at_the_bound(redis_server_url: str, redis_prefix: str,
                                                 command: str) -> None:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "kuota.cli", command, "-f", "/dev/zero", "--redis",
         redis_server_url, "--prefix", redis_prefix],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
        text=True, timeout=120, preexec_fn=limited_memory)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr[-2000:]
    assert done.stderr == ("error: /dev/zero: larger than 3,145,728 bytes, the most a file may "
                           "hold (the Kubernetes API server's request limit)\n")
    print(f"kuota {command} -f /dev/zero refused in {time.monotonic() - started:.2f}s")


@pytest.mark.parametrize("command", ["submit", "apply"])
def test_an_alias_bomb_is_refused_in_milliseconds(kuota: Kuota, tmp_path: Path,
                                                  command: str) -> None:
    path = tmp_path / "lol.yaml"
    path.write_text(BOMB_WORKLOAD if command == "submit" else
                    queues(CQ("cq", {"cpu": 1})) + "---\n" + laughs())
    started = time.process_time()
    status, out, err = kuota(command, "-f", str(path))
    took = time.process_time() - started
    assert (status, out) == (2, "")
    assert err.startswith(f"error: {path}: more than 100,000 YAML nodes (aliases counted as "
                          "the nodes they stand for), at line ")
    assert took < QUICK_CPU_SECONDS
    print(f"kuota {command} -f lol.yaml ({len(path.read_bytes())} bytes) refused in "
          f"{took * 1000:.1f} ms of CPU")
    assert stored(kuota) == ([], {})


def test_a_command_the_kernel_would_refuse_is_refused_at_submit(kuota: Kuota) -> None:
    status, out, err = kuota("submit", "--queue", "default/lq", "--name", "big",
                             "--requests", "cpu=1", "--", "echo",
                             "x" * (runnable.MAX_ARG_BYTES + 1))
    assert (status, out) == (2, "")
    assert err.startswith("error: submit: Workload big: spec.podSets[0].template.spec."
                          "containers[0].command[1]: is 131,072 bytes; a process argument")
    assert stored(kuota) == ([], {})


def test_a_manifest_past_the_bound_is_refused_at_submit(kuota: Kuota, tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    note = "n" * (2 * 1024 * 1024)  # under the 3 MiB file bound, over the 1.5 MiB object one
    path.write_text("apiVersion: kuota.dev/v1alpha1\nkind: Workload\nmetadata:\n  name: big\n"
                    f"  annotations:\n    note: {note}\nspec:\n  queueName: lq\n  podSets:\n"
                    "  - name: main\n    count: 1\n    template:\n      spec:\n"
                    "        containers:\n        - name: main\n          command: [echo]\n"
                    "          resources: {requests: {cpu: '1'}}\n")
    assert len(path.read_bytes()) < yaml_input.MAX_FILE_BYTES
    status, out, err = kuota("submit", "-f", str(path))
    assert (status, out) == (2, "")
    assert err.startswith("error: submit: Workload big: the manifest is 2,0")
    assert "at most 1,572,864 (1.5 MiB, the most Kubernetes stores in an object); its " \
           "largest field is metadata.annotations.note (2,097,152 bytes)" in err
