"""Shared fixtures: every test gets a fresh app on a temporary data directory (real SQLite and DuckDB files)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api_backend.app import create_app
from api_backend.services import Services, open_services
from api_backend.settings import Settings, load_settings
from tests.support import Account, live_server, make_account, make_site, patient, store_options, wait_until

pytest_plugins = ["tests.support.clickhouse"]

# Modules marked ``both_stores`` run every test once per event store; the others run on DuckDB (the default).
EVENT_STORES = ("duckdb", "clickhouse")


def _spread_dash_ports() -> None:
    """Give this process its own range of dash test-server ports, so two suites on one machine never collide.

    ``dash_duo`` numbers its servers from 58050 in every process; the range here is below the ephemeral ports.
    """
    from dash.testing.application_runners import BaseDashRunner

    BaseDashRunner._next_port = 20_000 + (os.getpid() % 300) * 100


_spread_dash_ports()


def _patient_browser_waits() -> None:
    """``dash_duo.wait_for_*`` waits ``patient(timeout)`` like ``wait_until``: load only makes them slower.

    A wait that runs out says what the page was doing instead (``page_report``).
    """
    from dash.testing.browser import Browser
    from selenium.common.exceptions import TimeoutException

    from tests.support.dashboard import page_report

    wait_for = Browser._wait_for

    def _wait_for(self, method, timeout, msg):
        try:
            return wait_for(self, method, patient(timeout if timeout is not None else self._wait_timeout), msg)
        except TimeoutException as late:
            raise TimeoutException(f"{late.msg}; {page_report(self)}") from late

    Browser._wait_for = _wait_for


_patient_browser_waits()


def _dropdown_picks_or_fails() -> None:
    """``dash_duo.select_dcc_dropdown`` waits for its option and fails when none matches.

    Dash's own looks at the menu once, and when the option is not drawn yet it logs the miss and returns: the test then
    waits for a change nobody asked for and fails far from the cause. Here a menu that did not open is opened again,
    the option is looked for in the dropdown's own menu (never another one left open), and a failure names what it
    showed.
    """
    from dash.testing.browser import Browser
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    def select_dcc_dropdown(self, elem_or_selector, value=None, index=None):
        clicked = [0.0]  # when the dropdown was last clicked open (monotonic seconds)

        def open_it() -> None:
            self._get_element(elem_or_selector).click()
            clicked[0] = time.monotonic()

        seen: list[str] = []  # the options the menu last showed, for the failure's message

        def menus():
            # The menu is drawn apart from its dropdown (a popover); the dropdown's button names it in aria-controls
            # while it is open, and only then. Another dropdown's open menu is never taken for this one's: a click
            # that landed on a neighbour while the page moved opened that one instead, and this one is opened again.
            owned = self._get_element(elem_or_selector).get_attribute("aria-controls")
            return self.driver.find_elements(By.ID, owned) if owned else []

        def option():
            try:
                shown = menus()
                if not shown:
                    if time.monotonic() - clicked[0] > 1.0:  # a menu still opening is left to open
                        open_it()
                    return None
                options = shown[0].find_elements(By.CSS_SELECTOR, ".dash-dropdown-option")
                seen[:] = [o.text for o in options]
                if isinstance(index, int):
                    return options[index] if len(options) > index else None
                return next((o for o in options if o.text == value), None)
            except StaleElementReferenceException:
                return None

        def picked():
            try:
                found = wait_until(option, 10, f"{elem_or_selector} offered no option {value!r} (index {index})")
            except AssertionError as missing:
                raise AssertionError(f"{missing}; its menu showed {seen}") from None
            try:
                found.click()
                return True
            except StaleElementReferenceException:
                return False

        open_it()
        wait_until(picked, 20, f"{elem_or_selector}: the option {value!r} kept being redrawn")

    Browser.select_dcc_dropdown = select_dcc_dropdown


_dropdown_picks_or_fails()

OUTPUT_DIR = Path(os.environ.get("SITELENS_TEST_OUTPUT", Path(__file__).resolve().parent.parent / "test-output"))


def pytest_setup_options():
    """dash[testing] hook: extra Chrome flags for headless runs on a closed network."""
    from selenium.webdriver.chrome.options import Options

    options = Options()
    for arg in (
        "--window-size=1400,1000",
        "--disable-background-networking",
        "--disable-extensions",
        "--no-first-run",
        "--disable-component-update",
        "--disable-sync",
    ):
        options.add_argument(arg)
    return options


@pytest.fixture
def output_dir() -> Path:
    """Where tests save screenshots and other artefacts for people to look at."""
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    return OUTPUT_DIR


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "both_stores: run the module's tests on the DuckDB and the ClickHouse store")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Give the tests of a ``both_stores`` module one run per event store (a module-scoped parameter)."""
    if metafunc.definition.get_closest_marker("both_stores") and "event_store" in metafunc.fixturenames:
        metafunc.parametrize("event_store", EVENT_STORES, indirect=True, scope="module")


@pytest.fixture(scope="module")
def event_store(request: pytest.FixtureRequest) -> str:
    """The event store the test runs on: ``duckdb`` unless its module is marked ``both_stores``."""
    return getattr(request, "param", "duckdb")


@pytest.fixture
def settings(tmp_path: Path, event_store: str, request: pytest.FixtureRequest) -> Settings:
    return load_settings(
        {},
        data_dir=str(tmp_path / "data"),
        secret_key="test-secret-key-0123456789",
        **store_options(event_store, request),
    )


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    services = open_services(settings)
    yield services
    services.close()


@pytest.fixture
def app(settings: Settings, services: Services):
    return create_app(settings, services)


@pytest.fixture
def client(app) -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture
def api_base(settings: Settings, services: Services) -> Iterator[str]:
    """The real API served on a loopback port (for the dashboard and other HTTP clients)."""
    with live_server(create_app(settings, services)) as base:
        yield base


@pytest.fixture
def owner(services: Services) -> Account:
    return make_account(services, "owner@example.com")


@pytest.fixture
def site(services: Services, owner: Account):
    return make_site(services, owner)
