"""How long a ``kuota`` command takes from exec to exit, as a user at a shell feels it.

Each command is run N times (default 15) as a fresh process (``python -m kuota``
would skip the console-script shim; this runs the installed ``kuota`` script next
to the interpreter) and the median wall time is printed, with the slowest run.
The target (issues 12 and 41) is a median under 0.3 s on an idle machine for each
everyday command: ``submit``, ``get``, ``get cq``, ``pending``, ``describe`` and
``status`` (and ``--help``, ``--version``): a CLI people type in a loop must not load
the Kubernetes client, kopf, aiohttp, the simulator or the operator when the command
does not use them. ``python -X importtime -m kuota.cli COMMAND ...`` shows what a slow
one loads.

The commands talk to a real redis-server, started on a free port of 127.0.0.1 unless
``--redis URL`` is given; a ClusterQueue and LocalQueue are applied and one workload
submitted first, so ``submit`` is accepted and ``pending``/``describe`` have something to
show (no scheduler runs: the workloads only wait, which is what a submission costs the
user). The exit status is 1 when a median is over the target.

Usage::

    python benchmarks/cli_startup.py [--runs 15] [--redis URL]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from redis_throughput import redis_server  # same directory: a redis-server on a free port

OBJECTS = """\
apiVersion: kuota.dev/v1alpha1
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kuota.dev/v1alpha1
kind: ClusterQueue
metadata: {name: bench}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: "4"}]
---
apiVersion: kuota.dev/v1alpha1
kind: LocalQueue
metadata: {name: bench, namespace: default}
spec: {clusterQueue: bench}
"""

TARGET = 0.3


def kuota_script() -> str:
    script = Path(sys.executable).with_name("kuota")
    if not script.exists():
        sys.exit(f"{script} not found: install the project (make setup) first")
    return str(script)


def timed(argv: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one run of ``argv``."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in ok:
        sys.exit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()[-400:]}")
    return elapsed, after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="runs per command (default 15)")
    parser.add_argument("--redis", default=None, metavar="URL",
                        help="use this Redis instead of starting a redis-server")
    args = parser.parse_args()
    kuota = kuota_script()
    with redis_server(args.redis) as url, tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "REDIS_URL": url, "KUOTA_PREFIX": f"bench{os.getpid()}",
               "COLUMNS": "120"}
        objects = Path(tmp) / "objects.yaml"
        objects.write_text(OBJECTS, encoding="utf-8")
        subprocess.run([kuota, "apply", "-f", str(objects)], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([kuota, "submit", "-q", "default/bench", "--requests", "cpu=1",
                        "--name", "waiting", "--", "true"], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        commands = {
            "kuota --help": [kuota, "--help"],
            "kuota --version": [kuota, "--version"],
            "kuota submit": [kuota, "submit", "-q", "default/bench", "--requests", "cpu=1",
                             "--", "true"],
            "kuota get workloads": [kuota, "get", "workloads"],
            "kuota get cq": [kuota, "get", "cq"],
            "kuota pending bench": [kuota, "pending", "bench"],
            "kuota describe": [kuota, "describe", "workload", "default/waiting"],
            "kuota status": [kuota, "status"],
        }
        timed(commands["kuota --version"], env)  # warm the page cache once
        print(f"{'command':<22} {'median':>8} {'max':>8} {'cpu':>8}   (runs={args.runs}, "
              f"target median < {TARGET} s; cpu: median user+system, what the command "
              "costs when other work on a busy machine stretches the wall time)")
        failed = False
        for label, argv in commands.items():
            # no scheduler runs: `kuota status` says so and exits 1 (still the full command)
            ok = (0, 1) if label == "kuota status" else (0,)
            runs = [timed(argv, env, ok) for _ in range(args.runs)]
            times = [wall for wall, _ in runs]
            median = statistics.median(times)
            cpu = statistics.median(cpu for _, cpu in runs)
            failed |= median >= TARGET
            mark = "ok" if median < TARGET else "SLOW"
            print(f"{label:<22} {median:>7.3f}s {max(times):>7.3f}s {cpu:>7.3f}s   {mark}",
                  flush=True)
    if failed:
        sys.exit("at least one command is over the target")


if __name__ == "__main__":
    main()
