"""Fixtures for the operator's end-to-end tests: an emulator with kuota's CRDs installed."""

from __future__ import annotations

import pathlib

import pytest

from tests.emulator import Emulator
from tests.integration.operator import harness


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    directory = tmp_path_factory.mktemp("webhook-certs")
    harness.certificate(directory)
    return directory


@pytest.fixture
def cluster(k8s_api: Emulator) -> Emulator:
    """The emulator with kuota's CRDs and the namespaces the tests use."""
    harness.install_crds(k8s_api)
    harness.namespace(k8s_api, "default")
    harness.namespace(k8s_api, "kuota-system")
    return k8s_api
