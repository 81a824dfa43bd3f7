"""Fixtures for multi-cluster dispatch end to end: a manager and two members (see fleet.py)."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest

from tests.integration.multicluster.fleet import Fleet, running_fleet
from tests.integration.operator import harness


@pytest.fixture(scope="module")
def mc_certs(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    directory = tmp_path_factory.mktemp("mc-webhook-certs")
    harness.certificate(directory)
    return directory


@pytest.fixture(scope="module")
def fleet(mc_certs: pathlib.Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """One fleet shared by a module's tests (each test cleans up its own Jobs)."""
    with running_fleet(mc_certs, tmp_path_factory.mktemp("fleet")) as running:
        yield running


@pytest.fixture
def own_fleet(mc_certs: pathlib.Path, tmp_path: pathlib.Path) -> Iterator[Fleet]:
    """A fleet for one test (fault injection: members stopped and restarted)."""
    with running_fleet(mc_certs, tmp_path) as running:
        yield running
