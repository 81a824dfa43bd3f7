"""The Redis-mode commands, run through ``kuota.cli.main`` against a real redis-server."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import CQ, Kuota, local_cluster, node, queues, wait_for

from kuota.client import WorkloadHandle

pytestmark = pytest.mark.redis


@pytest.fixture
def kuota(redis_server_url: str, redis_prefix: str,
          capsys: pytest.CaptureFixture[str]) -> Kuota:
    return Kuota(redis_server_url, redis_prefix, capsys)


def test_apply_submit_wait_logs(kuota: Kuota, redis_server_url: str, redis_prefix: str,
                                tmp_path: Path) -> None:
    (tmp_path / "q.yaml").write_text(queues(CQ("cq", {"cpu": 2})))
    status, out, _ = kuota("apply", "-f", str(tmp_path / "q.yaml"))
    assert status == 0
    assert out.splitlines() == ["ResourceFlavor/default created", "ClusterQueue/cq created",
                                "LocalQueue/default/lq-cq created"]
    with local_cluster(redis_server_url, redis_prefix, [node("pool", "n1", "cpu=2")]):
        status, out, err = kuota("submit", "--queue", "default/lq-cq", "--name", "hello",
                                 "--requests", "cpu=1", "--wait", "--timeout", "30",
                                 "--", "echo", "hello", "world")
        assert status == 0, err
        assert "workload default/hello Succeeded: all pods exited 0" in out
        assert kuota("logs", "hello") == (0, "hello world\n", "")
        failing = kuota("submit", "--queue", "default/lq-cq", "--requests", "cpu=1", "--wait",
                        "--", "false")
        assert failing[0] == 1 and "Failed" in failing[1]
        # Issue 12: --wait exited 1 whatever the job's own exit code.
        seven = kuota("submit", "--queue", "default/lq-cq", "--requests", "cpu=1", "--wait",
                      "--", "sh", "-c", "exit 7")
        assert seven[0] == 7 and "Failed" in seven[1]
        status, out, err = kuota("logs", "hello", "--pod", "5")
        assert (status, out) == (1, "")
        assert err == "error: workload default/hello has no pod 5 (it has 1 in attempt 1)\n"


def test_get_and_pending_show_usage_and_positions(kuota: Kuota, redis_server_url: str,
                                                  redis_prefix: str, tmp_path: Path) -> None:
    (tmp_path / "q.yaml").write_text(queues(CQ("cq", {"cpu": 1})))
    kuota("apply", "-f", str(tmp_path / "q.yaml"))
    with local_cluster(redis_server_url, redis_prefix, [node("pool", "n1", "cpu=4")]):
        for name in ("first", "second", "third"):
            assert kuota("submit", "--queue", "default/lq-cq", "--name", name, "--requests",
                         "cpu=1", "--", "sleep", "30")[0] == 0
        wait_for("first to run", lambda: kuota.json("get", "workloads", "first")["status"]
                 .get("nodes") == ["n1"])
        [cq] = kuota.json("get", "clusterqueues")
        assert cq["status"]["flavorsUsage"] == [
            {"name": "default", "resources": [{"name": "cpu", "total": "1", "borrowed": "0"}]}]
        assert (cq["status"]["pendingWorkloads"], cq["status"]["admittedWorkloads"]) == (2, 1)
        pending = kuota.json("pending", "cq")
        assert [(p["positionInClusterQueue"], p["metadata"]["name"]) for p in pending] == [
            (0, "second"), (1, "third")]
        [lq] = kuota.json("get", "localqueues")
        assert (lq["status"]["pendingWorkloads"], lq["status"]["admittedWorkloads"]) == (2, 1)
        [n1] = kuota.json("get", "nodes")
        assert (n1["metadata"]["name"], n1["spec"]["pool"], n1["status"]["state"],
                n1["status"]["pods"]) == ("n1", "pool", "Ready", 1)
        # its worker's stop check (0.1 s) and grace (1 s): how long a restart pause it asks
        assert n1["status"]["stopsWithinSeconds"] == pytest.approx(1.1)
        status, out, _ = kuota("get", "wl")
        assert status == 0 and "default/second" in out and "Pending" in out
        assert kuota("cancel", "first")[0] == 0
        wait_for("second to run", lambda: kuota.json("pending", "cq")[0]["metadata"]["name"]
                 == "third")
        for name in ("second", "third"):
            kuota("cancel", name)


def test_delete_and_error_statuses(kuota: Kuota, tmp_path: Path) -> None:
    (tmp_path / "q.yaml").write_text(queues(CQ("cq", {"cpu": 1})))
    kuota("apply", "-f", str(tmp_path / "q.yaml"))
    assert kuota("delete", "LocalQueue", "default/lq-cq")[0] == 0
    status, _, err = kuota("delete", "LocalQueue", "default/lq-cq")
    assert status == 1 and "LocalQueue default/lq-cq: not found" in err
    (tmp_path / "bad.yaml").write_text("apiVersion: kuota.dev/v1alpha1\nkind: ClusterQueue\n"
                                       "metadata: {name: x}\nspec: {cohortname: y}\n")
    status, _, err = kuota("apply", "-f", str(tmp_path / "bad.yaml"))
    assert status == 2 and "cohortname" in err
    status, _, err = kuota("logs", "nope")
    assert status == 1 and "default/nope: not found" in err
    assert kuota("pending", "nope")[0] == 1


def test_node_commands_cordon_drain_uncordon_and_remove(
        kuota: Kuota, redis_server_url: str, redis_prefix: str) -> None:
    from kuota.client import Client
    from kuota.service.connection import connect

    store = Client(connection=connect(redis_server_url, prefix=redis_prefix)).store
    store.nodes.register("n1", pool="pool", capacity={"cpu": 1000}, labels={}, devices=[],
                         now=1.0)

    def state() -> object:
        n1 = kuota.json("get", "nodes", "n1")
        return n1["status"]["state"], n1["spec"]["unschedulable"], n1["status"]["draining"]

    assert kuota("node", "cordon", "n1") == (0, "node n1 cordoned\n", "")
    assert state() == ("Ready", True, False)
    assert kuota("node", "drain", "n1")[:2] == (0, "node n1 draining\n")
    assert state() == ("Ready", True, True)
    assert kuota("node", "uncordon", "n1")[:2] == (0, "node n1 uncordoned\n")
    assert state() == ("Ready", False, False)
    status, _, err = kuota("node", "remove", "n1")
    assert status == 1 and err.startswith("error: node n1 is Ready (a worker serves it)")
    status, _, err = kuota("node", "cordon", "nope")
    assert status == 1 and "nope" in err


@pytest.mark.parametrize(("argv", "want_error"), [
    (["apply", "-f", "nope.yaml"], "error: nope.yaml: cannot read: No such file or directory"),
    (["apply", "-f", "nope"], "error: nope: cannot read: No such file or directory"),
    (["submit", "-f", "nope.yaml"], "error: nope.yaml: cannot read: No such file or directory"),
])
def test_a_missing_file_is_named_as_missing(kuota: Kuota, argv: list[str],
                                            want_error: str) -> None:
    """Issue 12: the path was parsed as YAML text ("expected an object")."""
    status, out, err = kuota(*argv)
    assert (status, out) == (2, "")
    assert err.strip() == want_error


def test_a_command_string_is_refused_not_split_into_characters(
        redis_server_url: str, redis_prefix: str) -> None:
    from kuota.client import Client
    from kuota.service.connection import connect
    from quota import api

    client = Client(connection=connect(redis_server_url, prefix=redis_prefix))
    with pytest.raises(api.ObjectError) as caught:
        client.submit("echo hi", queue="default/lq", requests={"cpu": 1})  # type: ignore[arg-type]
    [problem] = caught.value.problems
    assert problem.field == "command"
    assert "['echo', 'hi']" in problem.message
    assert client.workloads() == []


def test_working_dir_and_env_values_are_honoured(redis_server_url: str, redis_prefix: str,
                                                 tmp_path: Path) -> None:
    with local_cluster(redis_server_url, redis_prefix, [node("pool", "n1", "cpu=2")]) as cluster:
        client = cluster.client()
        client.apply(queues(CQ("cq", {"cpu": 2})))

        def run(working_dir: str) -> WorkloadHandle:
            return client.submit(workload={
                "apiVersion": "kuota.dev/v1alpha1", "kind": "Workload",
                "metadata": {"name": f"wd-{len(working_dir)}", "namespace": "default"},
                "spec": {"queueName": "lq-cq", "podSets": [{"name": "main", "count": 1,
                         "template": {"spec": {"containers": [{
                             "name": "main", "workingDir": working_dir,
                             "command": ["sh", "-c", 'pwd; echo "$GREETING"'],
                             "env": [{"name": "GREETING", "value": "hello there"}],
                             "resources": {"requests": {"cpu": "1"}}}]}}}]}})

        here = run(str(tmp_path))
        assert here.wait(30).succeeded
        assert here.logs() == f"{tmp_path}\nhello there\n"
        missing = run(str(tmp_path / "absent"))
        status = missing.wait(30)
        assert status.outcome == "Failed"
        assert "working directory" in status.message and "does not exist on node n1" \
            in status.message
