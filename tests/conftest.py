"""Shared pytest fixtures. Each section belongs to the component named in its header."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.emulator import Emulator

# --- Kubernetes API emulator (tests/emulator, docs/dev/emulator.md) ----------------------------


@pytest.fixture
def k8s_api() -> Iterator[Emulator]:
    """A fresh emulated Kubernetes API server on 127.0.0.1; ``k8s_api.url`` is its address.

    The test fails if the emulator itself crashed on a request (a bug, not an API error).
    """
    from tests.emulator import Emulator

    with Emulator() as api:
        yield api
        errors = api.unexpected_errors
    assert not errors, f"the emulator failed internally: {errors!r}"
