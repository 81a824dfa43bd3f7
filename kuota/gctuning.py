"""Garbage-collector settings for kuota's long-running, allocation-heavy processes.

CPython's cyclic collector runs a young-generation pass every 700 net container
allocations and, every so often, a full pass over every live object. A scheduler holds
tens of thousands of workload records, queue entries and quota nodes that live for the
whole run, and each scheduling cycle allocates many short-lived tuples and dicts, so
the default thresholds spend a large share of its time walking the same long-lived
objects again (28 % of the engine's CPU on Kueue's large-scale shape,
benchmarks/large_scale.py). kuota's data is almost free of reference cycles, so the
young generation is allowed to grow much larger before a pass, and what exists after
start-up (modules, configuration) is moved out of the collector's sight.
"""

from __future__ import annotations

import gc

#: Young-generation threshold (CPython's default is 700); the older generations keep
#: their default ratios.
YOUNG = 50_000


def tune() -> None:
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG, middle, old)
