"""Fixtures of the dashboard's browser tests: a chromium context, a page that leaves a
screenshot under $KUOTA_TEST_ARTIFACTS/dashboard when its test fails."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.dashboard import browser


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[FAILED] = report.failed
    return report


FAILED = pytest.StashKey[bool]()


@pytest.fixture(scope="module")
def browser_context() -> Iterator[Any]:
    with browser.launch() as context:
        yield context


@pytest.fixture
def page(browser_context: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    page = browser_context.new_page()
    page.set_default_timeout(10_000)
    yield page
    if request.node.stash.get(FAILED, False):
        path = browser.artifacts() / f"{request.node.name}-failure.png"
        try:
            page.screenshot(path=str(path), full_page=True)
            print(f"screenshot of the failure: {path}")
        except Exception as exc:  # the browser itself died: the test's error says more
            print(f"no screenshot: {exc}")
    page.close()
