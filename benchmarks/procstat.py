"""What a running process has cost so far, read from Linux's /proc (no psutil needed), and
what every process of a real-time run spent (:class:`MachineCPU`), in all and second by
second."""

from __future__ import annotations

import itertools
import os
import resource
import time
from pathlib import Path
from typing import Any


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss(pid: int) -> int:
    """Peak resident set of a running process (VmHWM), bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


class MachineCPU:
    """What every process of a real-time run spent, from the clock's start: the scheduler,
    redis-server (its ``INFO cpu``, so a server given by ``--redis`` is counted too) and
    the benchmark itself (the runner's threads in this process, the submitter a child).
    On a machine of two cores these share the cores the scheduler runs on: when their sum
    nears what the cores can give, the scheduler waits for a core as well as for its work.

    Sampled every second (:meth:`sample`, from the benchmark's waiting loops), the
    scheduler's and Redis's shares tell the run's phases apart: one at a core's worth is
    what holds the run back then (``timeline_lines``).
    """

    def __init__(self, redis_: Any, scheduler: int) -> None:
        """``redis_``: a client of the run's redis-server; ``scheduler``: its pid."""
        self.redis, self.scheduler = redis_, scheduler
        self.wall = time.monotonic()
        self.at_start = self._now()
        #: The submitter's CPU seconds, known once it has been waited for.
        self.submitter = 0.0
        #: (seconds since the start, scheduler CPU s, Redis CPU s), about a second apart.
        self.samples = [(0.0, self.at_start["scheduler"], self.at_start["redis"])]

    def sample(self) -> None:
        """Note the scheduler's and Redis's CPU if a second has passed since the last note."""
        at = time.monotonic() - self.wall
        if at - self.samples[-1][0] >= 1.0:
            now = self._now()
            self.samples.append((at, now["scheduler"], now["redis"]))

    def _now(self) -> dict[str, float]:
        info = self.redis.info("cpu")
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return {"scheduler": cpu_seconds(self.scheduler),
                "redis": float(info["used_cpu_user"]) + float(info["used_cpu_sys"]),
                "runner": time.process_time(),
                # (the submitter is the one child waited for during the run)
                "submitter": children.ru_utime + children.ru_stime}

    def submitter_done(self) -> None:
        """The submitter has been waited for: its CPU is in this process's children's."""
        self.submitter = self._now()["submitter"] - self.at_start["submitter"]

    def spent(self) -> dict[str, float]:
        """CPU seconds per process since the start, the seconds elapsed, and the cores."""
        now = self._now()
        spent = {name: now[name] - self.at_start[name] for name in ("scheduler", "redis",
                                                                     "runner")}
        spent["submitter"] = self.submitter
        spent["elapsed"] = time.monotonic() - self.wall
        spent["cores"] = float(len(os.sched_getaffinity(0)))
        self.samples.append((spent["elapsed"], now["scheduler"], now["redis"]))
        return spent

    def timeline(self) -> list[tuple[float, float, float]]:
        """(seconds from the start, scheduler cores, Redis cores) of each sampled interval,
        the cores being CPU seconds over the interval's seconds."""
        return [(at, (sched - sched0) / (at - at0), (red - red0) / (at - at0))
                for (at0, sched0, red0), (at, sched, red) in itertools.pairwise(self.samples)
                if at > at0]


def timeline_lines(timeline: list[tuple[float, float, float]]) -> list[str]:
    """:meth:`MachineCPU.timeline` as two lines of cores used, a figure per interval."""
    return [f"{name:<10}" + " ".join(f"{row[column]:.1f}" for row in timeline)
            for name, column in (("scheduler", 1), ("redis", 2))]


def machine_line(spent: dict[str, float]) -> str:
    """The machine's CPU over a real-time run (:meth:`MachineCPU.spent`), as one line."""
    total = sum(spent[k] for k in ("scheduler", "redis", "runner", "submitter"))
    capacity = spent["elapsed"] * spent["cores"]
    return (f"scheduler {spent['scheduler']:.1f} + redis-server {spent['redis']:.1f} + "
            f"runner {spent['runner']:.1f} + submitter {spent['submitter']:.1f} = "
            f"{total:.1f} CPU s in {spent['elapsed']:.1f} s on {spent['cores']:.0f} cores "
            f"({100 * total / capacity:.0f} % of what they give)")
