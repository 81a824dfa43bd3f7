"""Building blocks of the Redis-mode chaos test (test_redis_chaos.py).

* :class:`LossyRedis` — a redis-server with ``appendonly yes``, ``appendfsync
  everysec``, that can *crash losing its last second*: :meth:`LossyRedis.mark`
  notes how long each AOF file is, and :meth:`LossyRedis.crash` — about a
  second later — kills it with SIGKILL, truncates every AOF file back to its
  marked length and starts it again from them.

  Why truncation models ``everysec``: Redis appends every write to the AOF
  (``write(2)``) before it answers the client, and a background thread calls
  ``fsync`` once a second. A ``kill -9`` of Redis alone loses nothing (the
  page cache still holds the writes); a power loss or kernel crash loses what
  was written since the last ``fsync`` — up to about a second of acknowledged
  writes, the tail of the file. Cutting the file back to its length of a
  second ago is exactly that loss (the cut may fall inside a command: Redis
  drops a torn last command, ``aof-load-truncated yes``). AOF rewrites are
  off, so the files only grow between a mark and a crash.

* :func:`pod_command` — what each pod runs: it appends a ``start`` line, sleeps,
  appends an ``end`` line (also on SIGTERM) to ``runs/<workload name>``, and
  exits with a chosen code; :func:`read_runs` turns those files into
  :class:`Run` intervals (a pod killed with its worker writes no ``end``: it
  ended when its worker was killed).

* :func:`overlapping_runs` and :func:`peak_usage` — the checks made on what
  really ran: no job ran twice at once, and the pods running at any instant
  never held more than a ClusterQueue's limit or a node's capacity.
"""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.integration.redis.server import RedisServer

_AOF_DIR = "appendonlydir"


class LossyRedis(RedisServer):
    def __init__(self) -> None:
        super().__init__(appendonly=True)
        self._marked: dict[str, int] | None = None
        self._marked_at = 0.0
        #: Each crash's lost span: from just before the mark to when the restarted server
        #: answered (nothing acknowledged after that can be lost, nor anything between the
        #: kill and then; a submitter notes an acknowledgement a little after it came).
        self.crashes: list[tuple[float, float]] = []

    def args(self) -> list[str]:
        args = super().args()
        args[args.index("--appendfsync") + 1] = "everysec"
        return [*args, "--auto-aof-rewrite-percentage", "0", "--aof-load-truncated", "yes"]

    def _aof_files(self) -> list[Path]:
        return sorted(p for p in (Path(self.dir) / _AOF_DIR).glob("*.aof") if p.is_file())

    def mark(self) -> None:
        """Note the AOF files' lengths: what a crash will keep."""
        self._marked_at = time.time()
        self._marked = {p.name: p.stat().st_size for p in self._aof_files()}

    def crash(self) -> int:
        """SIGKILL, cut the AOF back to the mark, start again; returns the bytes dropped."""
        assert self._marked is not None, "mark() first"
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.proc = None
        dropped = 0
        for path in self._aof_files():
            size = path.stat().st_size
            keep = self._marked.get(path.name, 0)
            if size > keep:
                dropped += size - keep
                with open(path, "r+b") as f:
                    f.truncate(keep)
        self._marked = None
        self.start()
        self.crashes.append((self._marked_at, time.time()))
        return dropped


# A pod: note the start, sleep, note the end (also when asked to stop), exit with $3.
_POD = r'''f="$1/${KUOTA_WORKLOAD#*/}"
id="$KUOTA_ATTEMPT $KUOTA_POD_INDEX $KUOTA_NODE $$"
echo "start $(date +%s.%N) $id" >> "$f"
trap 'echo "end $(date +%s.%N) $id 143" >> "$f"; exit 143' TERM
sleep "$2" & wait $!
echo "end $(date +%s.%N) $id $3" >> "$f"
exit "$3"'''


def pod_command(runs: Path, seconds: float, exit_code: int) -> list[str]:
    return ["sh", "-c", _POD, "pod", str(runs), f"{seconds:.3f}", str(exit_code)]


@dataclass(frozen=True)
class Run:
    """One pod process as it recorded itself."""

    job: str
    attempt: int
    index: int
    node: str
    pid: int
    start: float
    #: When it ended: its own ``end`` line, else the kill of its worker, else infinity.
    end: float
    exit_code: int | None

    def __str__(self) -> str:
        return (f"{self.job} attempt {self.attempt} pod {self.index} on {self.node} "
                f"[{self.start:.3f}, {self.end:.3f}] exit {self.exit_code}")


_LINE = re.compile(r"^(start|end) (\d+\.\d+) (\d+) (\d+) (\S+) (\d+)(?: (\d+))?$")


def read_runs(runs: Path, worker_kills: Mapping[str, Sequence[float]]) -> list[Run]:
    """Every pod process of every job; ``worker_kills``: when each node's worker was killed."""
    out: list[Run] = []
    for path in sorted(runs.iterdir()):
        starts: dict[tuple[int, int, str, int], float] = {}
        ends: dict[tuple[int, int, str, int], tuple[float, int]] = {}
        for line in path.read_text().splitlines():
            m = _LINE.match(line)
            if m is None:  # a line torn by a kill: the start it belongs to is whole
                continue
            kind, at, attempt, index, node, pid, code = m.groups()
            key = (int(attempt), int(index), node, int(pid))
            if kind == "start":
                starts[key] = float(at)
            else:
                ends[key] = (float(at), int(code))
        for key, start in starts.items():
            attempt, index, node, pid = key
            if key in ends:
                end, code = ends[key][0], ends[key][1]
            else:  # SIGKILLed with its worker (PR_SET_PDEATHSIG), if that worker was killed
                end = min((t for t in worker_kills.get(node, ()) if t >= start),
                          default=float("inf"))
                code = None
            out.append(Run(path.name, attempt, index, node, pid, start, end, code))
    return out


def overlapping_runs(runs: Iterable[Run]) -> list[tuple[Run, Run]]:
    """Pairs of processes of one job that ran at the same time although they must not:
    two attempts of the job, or the same pod of one attempt started twice."""
    by_job: dict[str, list[Run]] = {}
    for run in runs:
        by_job.setdefault(run.job, []).append(run)
    bad = []
    for job_runs in by_job.values():
        job_runs.sort(key=lambda r: r.start)
        for i, a in enumerate(job_runs):
            for b in job_runs[i + 1:]:
                if b.start >= a.end:
                    continue
                if a.attempt != b.attempt or a.index == b.index:
                    bad.append((a, b))
    return bad


@dataclass(frozen=True)
class Peak:
    amount: int
    #: The pods running at that instant.
    runs: tuple[Run, ...]

    def __str__(self) -> str:
        return f"{self.amount}: " + "; ".join(map(str, self.runs))


def peak_usage(runs: Iterable[Run], where: Callable[[Run], str],
               size: Mapping[str, int]) -> dict[str, Peak]:
    """Most held at once, per place (``where``: a run's ClusterQueue, or its node), from
    ``size``: what each pod of a job requests."""
    edges: dict[str, list[tuple[float, int, int, Run]]] = {}
    for n, run in enumerate(r for r in runs if r.end > r.start):
        edges.setdefault(where(run), []).extend(((run.start, 1, n, run), (run.end, 0, n, run)))
    peaks = {}
    for place, points in edges.items():
        level, peak, live = 0, Peak(0, ()), dict[int, Run]()
        for _, starts, n, run in sorted(points):  # at a tie the end comes first
            if starts:
                live[n] = run
                level += size[run.job]
            else:
                del live[n]
                level -= size[run.job]
            if level > peak.amount:
                peak = Peak(level, tuple(live.values()))
        peaks[place] = peak
    return peaks
