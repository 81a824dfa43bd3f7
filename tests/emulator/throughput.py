"""How fast the emulator serves writes while watchers listen.

Run ``python -m tests.emulator.throughput [--jobs N] [--watchers W]``. One
keep-alive HTTP client creates N Jobs, then merge-patches each of them, then
lists them all, while W watchers stream every event. Prints requests per
second for each phase and when the watchers had seen everything. The figures
bound what an operator benchmark against the emulator can reach.
"""

from __future__ import annotations

import argparse
import http.client
import json
import threading
import time
from typing import Any

from .clients import WatchStream
from .runner import Emulator


def job(index: int) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox",
                 "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"j{index}", "namespace": "default",
                         "labels": {"kuota.dev/queue-name": "q"}},
            "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never",
                                                            "containers": [container]}}}}


def measure(count: int, watchers: int) -> dict[str, float]:
    with Emulator() as api:
        since = api.store.resource_version
        seen = [0] * watchers

        def watch(slot: int) -> None:
            path = f"/apis/batch/v1/jobs?watch=true&resourceVersion={since}"
            with WatchStream(api.url, path, timeout=60) as stream:
                while seen[slot] < 2 * count and stream.next() is not None:
                    seen[slot] += 1

        threads = [threading.Thread(target=watch, args=(slot,)) for slot in range(watchers)]
        for thread in threads:
            thread.start()
        conn = http.client.HTTPConnection("127.0.0.1", api.port)

        def send(method: str, path: str, body: Any, content_type: str) -> bytes:
            conn.request(method, path, body=json.dumps(body),
                         headers={"Content-Type": content_type})
            answer = conn.getresponse()
            data = answer.read()
            if answer.status >= 300:
                raise RuntimeError(f"{method} {path}: {answer.status} {data[:200]!r}")
            return data

        started = time.monotonic()
        for index in range(count):
            send("POST", "/apis/batch/v1/namespaces/default/jobs", job(index), "application/json")
        created = time.monotonic()
        for index in range(count):
            send("PATCH", f"/apis/batch/v1/namespaces/default/jobs/j{index}",
                 {"spec": {"suspend": False}}, "application/merge-patch+json")
        patched = time.monotonic()
        conn.request("GET", "/apis/batch/v1/jobs")
        size = len(conn.getresponse().read())
        listed = time.monotonic()
        for thread in threads:
            thread.join(60)
        watched = time.monotonic()
        conn.close()
    return {"creates_per_s": count / (created - started),
            "patches_per_s": count / (patched - created),
            "list_s": listed - patched, "list_kib": size / 1024,
            "all_watched_s": watched - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--watchers", type=int, default=3)
    options = parser.parse_args()
    figures = measure(options.jobs, options.watchers)
    print(f"{options.jobs} jobs, {options.watchers} watchers: "
          f"{figures['creates_per_s']:.0f} creates/s, {figures['patches_per_s']:.0f} patches/s, "
          f"list {figures['list_kib']:.0f} KiB in {figures['list_s'] * 1000:.0f} ms, "
          f"every event watched after {figures['all_watched_s']:.2f} s")


if __name__ == "__main__":
    main()
