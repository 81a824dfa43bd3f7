"""Requeue backoff for workloads evicted because their pods were not ready.

After the n-th such eviction a workload waits ``base × 2^(n-1)`` seconds,
at most ``max``, stretched by up to ``jitter`` (a fraction) from an injected
random source so that many workloads evicted together do not return together.
Past ``backoffLimitCount`` evictions it is deactivated instead.
"""

from __future__ import annotations

import random

from quota.config import RequeuingStrategy


def delay(strategy: RequeuingStrategy, attempt: int, rng: random.Random,
          jitter: float) -> float:
    """Seconds to wait before the ``attempt``-th requeue (1-based)."""
    base = strategy.backoff_base_seconds * float(2 ** max(0, attempt - 1))
    capped = min(base, strategy.backoff_max_seconds)
    return min(capped * (1 + jitter * rng.random()), strategy.backoff_max_seconds)


def exhausted(strategy: RequeuingStrategy, attempt: int) -> bool:
    limit = strategy.backoff_limit_count
    return limit is not None and attempt > limit
