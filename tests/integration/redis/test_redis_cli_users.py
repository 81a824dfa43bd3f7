"""Issue 12, scope 7 and 9: the CLI a Slurm or rq user expects, and the scheduler's
metrics — against a real redis-server, with real scheduler and worker processes where the
behaviour lives in them (status, metrics)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest
import yaml
from harness import CQ, REPO, Processes, local_cluster, node, queues, wait_for
from test_redis_cli import Kuota

from kuota.client import Client
from kuota.service.connection import connect
from tests.ports import free_port

pytestmark = pytest.mark.redis


@pytest.fixture
def kuota(redis_server_url: str, redis_prefix: str,
          capsys: pytest.CaptureFixture[str]) -> Kuota:
    return Kuota(redis_server_url, redis_prefix, capsys)


@pytest.fixture
def client(redis_server_url: str, redis_prefix: str, tmp_path: Path) -> Client:
    client = Client(connection=connect(redis_server_url, prefix=redis_prefix))
    client.apply(queues(CQ("cq", {"cpu": 4}), CQ("other", {"cpu": 4})))
    return client


def submit(client: Client, name: str, queue: str = "default/lq-cq", **labels: str) -> None:
    client.submit(workload={
        "apiVersion": "kuota.dev/v1alpha1", "kind": "Workload",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"queueName": queue.partition("/")[2], "podSets": [{
            "name": "main", "count": 1, "template": {"spec": {"containers": [{
                "name": "main", "command": ["sleep", "30"],
                "resources": {"requests": {"cpu": "1"}}}]}}}]}})


# -- get: NAME, filters, objects, tables that fit ------------------------------------------

@pytest.mark.parametrize(("argv", "want_names"), [
    (["get", "wl"], ["a", "b", "c"]),
    (["get", "wl", "b"], ["b"]),
    (["get", "wl", "default/b"], ["b"]),
    (["get", "wl", "-l", "team=x"], ["a", "c"]),
    (["get", "wl", "-l", "team=x,tier!=gold"], ["a"]),
    (["get", "wl", "-l", "!team"], ["b"]),
    (["get", "wl", "--queue", "other"], ["c"]),
    (["get", "wl", "--queue", "default/lq-cq"], ["a", "b"]),
    (["get", "wl", "--state", "pending"], ["a", "b", "c"]),
    (["get", "wl", "--state", "Admitted"], []),
    # the finished (read from Redis only when they may be shown)
    (["get", "wl", "-a"], ["a", "b", "c", "d"]),
    (["get", "wl", "d"], ["d"]),
    (["get", "wl", "--state", "Cancelled"], ["d"]),
    (["get", "wl", "-a", "-l", "team=y"], ["d"]),
])
def test_get_filters_workloads(kuota: Kuota, client: Client, argv: list[str],
                               want_names: list[str]) -> None:
    """Issue 12: no NAME argument, no label/queue/state filters."""
    submit(client, "a", team="x", tier="silver")
    submit(client, "b")
    submit(client, "c", "default/lq-other", team="x", tier="gold")
    submit(client, "d", team="y")
    client.workload("d").cancel()
    doc = kuota.json(*argv)
    items = doc if isinstance(doc, list) else [doc]
    assert [w["metadata"]["name"] for w in items] == want_names


def test_get_prints_objects_with_numbers_and_rfc3339_times(kuota: Kuota,
                                                           client: Client) -> None:
    """Issue 12: `-o json` was the table as strings ("15s", "cpu[a100]=3/2")."""
    submit(client, "a", team="x")
    obj = kuota.json("get", "wl", "a")
    assert (obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["labels"]) == (
        "Workload", "default", {"team": "x"})
    assert obj["metadata"]["creationTimestamp"].endswith("Z")
    assert obj["status"]["state"] == "Pending" and obj["status"]["attempt"] == 0
    assert obj["spec"]["podSets"][0]["count"] == 1
    status, out, _ = kuota("get", "cq", "cq", "-o", "yaml")
    cq = yaml.safe_load(out)
    assert status == 0 and cq["kind"] == "ClusterQueue"
    assert (cq["status"]["pendingWorkloads"], cq["status"]["admittedWorkloads"]) == (1, 0)
    assert cq["status"]["flavorsUsage"][0]["resources"] == [
        {"name": "cpu", "total": "0", "borrowed": "0"}]


def test_get_table_fits_the_terminal_and_wide_shows_everything(
        kuota: Kuota, client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 12: tables were ~200 columns wide whatever the terminal. Issue 41: only on a
    terminal; piped (a CI log) nothing is cut."""
    client.submit(["sh", "-c", "x" * 300], queue="default/lq-cq", name="long",
                  requests={"cpu": "1"})
    monkeypatch.setenv("COLUMNS", "70")
    status, piped, _ = kuota("get", "wl")
    assert status == 0 and "default/long" in piped and "…" not in piped
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    status, out, _ = kuota("get", "wl")
    assert status == 0 and "default/long" in out
    shown = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in out.splitlines()]  # bold header
    assert max(len(line) for line in shown) <= 70, out
    status, wide, _ = kuota("get", "wl", "-o", "wide")
    assert "CLUSTERQUEUE" in wide and "PRIORITY" in wide


def test_get_a_missing_name_is_one_line_and_status_1(kuota: Kuota, client: Client) -> None:
    status, out, err = kuota("get", "wl", "nope", "-o", "json")
    assert (status, out, err) == (1, "", "error: workload default/nope: not found\n")
    with pytest.raises(SystemExit) as exited:
        kuota("get", "wl", "--state", "Sleeping")
    assert exited.value.code == 2
    assert "'Sleeping' is not a state" in kuota.capsys.readouterr().err


def test_get_watch_prints_again_until_interrupted(kuota: Kuota, client: Client,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from kuota.commands import output

    rounds = []

    def sleep(seconds: float) -> None:
        rounds.append(seconds)
        if len(rounds) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(output.time, "sleep", sleep)
    submit(client, "a")
    status, out, _ = kuota("get", "wl", "--watch", "--interval", "0.5")
    assert status == 0 and out.count("default/a") == 3 and rounds == [0.5, 0.5, 0.5]


def test_submit_and_get_say_when_no_scheduler_leads(kuota: Kuota, client: Client,
                                                    redis_server_url: str,
                                                    redis_prefix: str) -> None:
    """Issue 12: with the scheduler dead, `submit` succeeded and `get` said nothing."""
    note = "note: no scheduler holds the lease"
    status, _, err = kuota("submit", "-q", "default/lq-cq", "--requests", "cpu=1", "--", "true")
    assert status == 0 and err.startswith(note)
    assert kuota("get", "wl")[2].startswith(note)
    assert note not in kuota("get", "wl", "-o", "json")[2]  # scripts read stdout only anyway
    with local_cluster(redis_server_url, redis_prefix, []):
        wait_for("a leader", lambda: client.store.redis.exists(client.store.keys.lease))
        status, _, err = kuota("submit", "-q", "default/lq-cq", "--requests", "cpu=1", "--",
                               "true")
        assert (status, err) == (0, "")


# -- cancel by selector, queue stop/resume ---------------------------------------------------

def test_cancel_by_selector_cancels_only_the_matching_workloads(kuota: Kuota,
                                                                client: Client) -> None:
    submit(client, "a", team="x")
    submit(client, "b")
    submit(client, "c", "default/lq-other", team="x")
    status, out, _ = kuota("cancel", "-l", "team=x", "--queue", "cq", "--dry-run")
    assert (status, out) == (0, "workload default/a would be cancelled\n")
    assert client.workload("a").status().state == "Pending"
    status, out, _ = kuota("cancel", "-l", "team=x")
    assert (status, out.splitlines()) == (0, ["workload default/a cancelled",
                                              "workload default/c cancelled"])
    assert [w.key for w in client.workloads() if w.state != "Finished"] == ["default/b"]
    assert kuota("cancel", "b", "-l", "team=x")[0] == 2


def test_a_stopped_queue_admits_nothing_until_resumed(
        kuota: Kuota, client: Client, redis_server_url: str, redis_prefix: str) -> None:
    assert kuota("queue", "stop", "cq", "cq", "--keep-already-running") == (
        0, "ClusterQueue cq stopped (stopPolicy Hold)\n", "")
    assert client.store.objects.manifests("ClusterQueue")["cq"]["spec"]["stopPolicy"] == "Hold"
    with local_cluster(redis_server_url, redis_prefix, [node("pool", "n1", "cpu=4")]):
        handle = client.submit(["true"], queue="default/lq-cq", name="held",
                               requests={"cpu": "1"})
        wait_for("the hold to be given as the reason",
                 lambda: handle.status().reason not in ("", "Pending"))
        assert handle.status().state == "Pending"
        assert kuota("queue", "resume", "cq", "cq")[1] == \
            "ClusterQueue cq resumed (stopPolicy None)\n"
        assert handle.wait(30).succeeded
    assert kuota("queue", "stop", "lq", "lq-cq")[1] == \
        "LocalQueue default/lq-cq stopped (stopPolicy HoldAndDrain)\n"
    assert kuota("queue", "stop", "cq", "nope") == (1, "", "error: ClusterQueue nope: not found\n")


# -- history, logs of every attempt, submit --wait --follow ----------------------------------

def test_history_logs_of_each_attempt_and_follow(kuota: Kuota, client: Client,
                                                 redis_server_url: str, redis_prefix: str,
                                                 tmp_path: Path) -> None:
    marker = tmp_path / "tried"
    script = f'echo "try $KUOTA_ATTEMPT"; test -f {marker} || {{ touch {marker}; exit 3; }}'
    with local_cluster(redis_server_url, redis_prefix, [node("pool", "n1", "cpu=4")]):
        status, out, err = kuota("submit", "-q", "default/lq-cq", "--name", "retry",
                                 "--requests", "cpu=1", "--backoff-limit", "1", "--wait",
                                 "--follow", "--timeout", "60", "--", "sh", "-c", script)
        assert status == 0, err
        assert "workload default/retry Succeeded" in err  # stdout holds the job's output only
        assert out.count("try") == 2 and "==> attempt 2 <==" in out
        assert kuota("submit", "-q", "default/lq-cq", "--name", "seven", "--requests",
                     "cpu=1", "--wait", "--", "sh", "-c", "exit 7")[0] == 7
    assert kuota("logs", "retry", "--attempt", "1")[1].startswith("try")
    assert kuota("logs", "retry")[1].startswith("try")
    status, _, err = kuota("logs", "retry", "--attempt", "3")
    assert (status, err) == (1, "error: workload default/retry has no attempt 3 "
                                "(attempts: 1, 2)\n")
    rows = {w["metadata"]["name"]: w["status"] for w in kuota.json("history")}
    assert rows["retry"]["outcome"] == "Succeeded" and rows["retry"]["attempt"] == 2
    assert rows["retry"]["exitCodes"] == [0] and rows["seven"]["exitCodes"] == [7]
    assert rows["seven"]["runSeconds"] >= 0 and rows["seven"]["finishedAt"].endswith("Z")
    assert [w["metadata"]["name"] for w in kuota.json("history", "--outcome", "failed")] == [
        "seven"]
    status, table, _ = kuota("history")
    assert "EXIT_CODES" in table and "Failed" in table


# -- status and metrics: real scheduler and worker processes --------------------------------

def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


def test_status_and_metrics_of_a_live_and_a_dead_scheduler(
        kuota: Kuota, client: Client, redis_server_url: str, redis_prefix: str,
        tmp_path: Path) -> None:
    """Issue 12: a dead scheduler was invisible; Redis mode had no /metrics."""
    port = free_port()
    procs = Processes(redis_server_url, redis_prefix, tmp_path)
    try:
        procs.scheduler("s1", "--metrics-listen", f"127.0.0.1:{port}")
        procs.worker("pool", "w1", "cpu=2")
        handle = client.submit(["true"], queue="default/lq-cq", name="one",
                               requests={"cpu": "1"})
        assert handle.wait(30).succeeded
        report = wait_for("s1 to announce itself as leader", lambda: (
            r := json.loads(kuota("status", "-o", "json")[1]))["schedulers"] and r)
        [s1] = report["schedulers"]
        assert report["workloads"] == {"pending": 0, "running": 0, "finished": 1}
        assert (s1["identity"], s1["state"]) == ("s1", "Leader")
        assert report["leader"]["identity"] == "s1" and report["leader"]["announced"]
        assert report["pools"] == [{"name": "pool", "nodesReady": 1, "nodes": 1,
                                    "resources": {"cpu": {"free": "2", "total": "2"}}}]
        status, table, _ = kuota("status")
        assert status == 0 and "s1" in table and "cpu=2/2" in table
        # the session's redis-server keeps no AOF: a crash would lose what it answered
        assert report["store"]["mayLoseWrites"].startswith("it runs appendonly no")
        assert "store: redis://" in table and "may lose acknowledged writes" in table

        cell = 'cluster_queue="cq",cohort="",flavor="default",resource="cpu"'
        samples = wait_for("the admission to be counted", lambda: (
            m := scrape(port)).get('kueue_admitted_workloads_total{cluster_queue="cq"}') and m)
        assert samples[f"kueue_cluster_queue_nominal_quota{{{cell}}}"] == 4.0
        assert samples['kueue_admission_wait_time_seconds_count{cluster_queue="cq"}'] == 1.0
        assert samples['kueue_pending_workloads{cluster_queue="cq",status="active"}'] == 0.0
        assert samples["kuota_scheduler_leading"] == 1.0
        assert samples["kuota_scheduler_step_duration_seconds_count"] > 0
        assert 0 < samples["kuota_scheduler_step_longest_seconds"] < 5
        # (an idle leader's steps are mostly waiting for events, inside the read)
        assert samples['kuota_scheduler_step_stage_seconds_total{stage="read"}'] > 0
        blocker = client.submit(["sleep", "30"], queue="default/lq-cq", name="big",
                                requests={"cpu": "2"})
        wait_for("usage to show", lambda: scrape(port).get(
            f"kueue_cluster_queue_resource_usage{{{cell}}}") == 2.0)
        blocker.cancel()

        procs.procs["s1"].send_signal(signal.SIGKILL)  # no clean exit: a dead scheduler
        procs.procs.pop("s1").wait(10)
        report = wait_for("s1 to be seen dead", lambda: (
            r := json.loads(kuota("status", "-o", "json")[1]))["schedulers"][0]["state"]
            == "NotResponding" and r["leader"] is None and r, timeout=20)
        status, table, _ = kuota("status")
        assert status == 1 and "NO SCHEDULER HOLDS THE LEASE" in table
        assert "NotResponding" in table
    finally:
        procs.stop_all()


def test_metrics_listen_is_checked(kuota: Kuota) -> None:
    status, _, err = kuota("scheduler", "--metrics-listen", "nowhere")
    assert (status, err) == (2, "error: --metrics-listen: 'nowhere' is not HOST:PORT\n")


# -- one-line errors -------------------------------------------------------------------------

def run_cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kuota.cli", *argv], cwd=REPO, text=True,
                          capture_output=True, timeout=60, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


def test_a_db_index_out_of_range_is_one_line(redis_server_url: str) -> None:
    done = run_cli("get", "wl", "--redis", redis_server_url.rsplit("/", 1)[0] + "/99999")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: Redis at redis://127.0.0.1:")
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_port_that_is_not_redis_is_one_line() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()

        def answer() -> None:
            conn, _ = server.accept()
            with conn:
                conn.recv(1024)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

        threading.Thread(target=answer, daemon=True).start()
        done = run_cli("get", "wl", "--redis", f"redis://127.0.0.1:{server.getsockname()[1]}/0")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: "), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_get_json_into_head_is_quiet(client: Client, redis_server_url: str,
                                     redis_prefix: str) -> None:
    for i in range(150):  # more output than a pipe holds
        submit(client, f"w{i}")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    shell = (f"{sys.executable} -m kuota.cli get wl -o json --redis {redis_server_url} "
             f"--prefix {redis_prefix} | head -1; echo \"status=${{PIPESTATUS[0]}}\"")
    done = subprocess.run(["bash", "-c", shell], cwd=REPO, text=True, capture_output=True,
                          timeout=60, env=env, check=False)
    assert done.stdout == "{\nstatus=0\n" and done.stderr == "", done.stderr


def test_completion_scripts_name_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    from kuota import cli

    for shell in ("bash", "zsh"):
        assert cli.main(["completion", shell]) == 0
        out = capsys.readouterr().out
        assert "complete -o default -F _kuota kuota" in out
        assert all(name in out for name in cli.COMMANDS)
    done = subprocess.run(["bash", "-c", f"source <({sys.executable} -m kuota.cli completion "
                           "bash) && COMP_WORDS=(kuota get --out) COMP_CWORD=2 && _kuota && "
                           "echo ${COMPREPLY[@]}"], cwd=REPO, text=True, capture_output=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert done.stdout.split() == ["--output"], done.stderr


