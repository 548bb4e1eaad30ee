"""Helpers for the dashboard's browser tests."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.support import PASSWORD, patient, wait_until


def sign_in(dash_duo, email: str, password: str = PASSWORD, *, expect_sites: bool = True) -> None:
    """Fill the sign-in form like a person and submit it; by default wait for the site list."""
    dash_duo.wait_for_element("#login-email", timeout=10)
    dash_duo.find_element("#login-email").send_keys(email)
    dash_duo.find_element("#login-password").send_keys(password)
    dash_duo.find_element("#login-submit").click()
    if expect_sites:
        dash_duo.wait_for_element("#sites-list", timeout=10)


def click(dash_duo, selector: str, timeout: float = 10) -> None:
    """Click ``selector``, finding it again if the page re-rendered it between the lookup and the click.

    The element is scrolled to the middle of the window first, so the sticky navbar never covers it.
    """
    from selenium.common.exceptions import ElementClickInterceptedException, StaleElementReferenceException

    deadline = time.monotonic() + patient(timeout)
    while True:
        try:
            element = dash_duo.find_element(selector)
            dash_duo.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", element)
            element.click()
            return
        except (StaleElementReferenceException, ElementClickInterceptedException):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def found_now(dash_duo, selector: str) -> list:
    """The elements matching ``selector`` in the page as it is, looked up once.

    ``dash_duo``'s driver waits up to 2 s for a lookup to find something (its implicit wait), so each check that an
    element is absent would wait that out: the unknown-site test alone spent a minute in them.
    """
    from selenium.webdriver.common.by import By

    driver = dash_duo.driver
    implicit = driver.timeouts.implicit_wait
    driver.implicitly_wait(0)
    try:
        found = driver.find_elements(By.CSS_SELECTOR, selector)
    finally:
        driver.implicitly_wait(implicit)
    return found


def shown(dash_duo, selector: str) -> list:
    """The elements matching ``selector`` that are displayed now (``found_now``)."""
    return [e for e in found_now(dash_duo, selector) if e.is_displayed()]


WIDTHS = (1440, 390)


def page_fits(dash_duo) -> bool:
    """Whether the page scrolls only up and down: the document is no wider than the window's layout viewport."""
    return dash_duo.driver.execute_script(
        "return document.documentElement.scrollWidth <= document.documentElement.clientWidth;"
    )


# Every Plotly chart is drawn at its box's width and within the window (it redraws after the window changes).
CHARTS_REDRAWN = """
return Array.from(document.querySelectorAll('.js-plotly-plot')).every(function (g) {
  var svg = g.querySelector('.main-svg');
  if (!svg) { return true; }
  var box = g.getBoundingClientRect(), drawn = svg.getBoundingClientRect();
  return Math.abs(drawn.width - box.width) < 2 && drawn.right <= document.documentElement.clientWidth + 1;
});
"""


# Narrowed to a phone's width, the chart in ``arguments[0]`` is drawn inside its box, which keeps a height of at least
# ``arguments[1]`` px: a box of 0 px would leave the chart drawn over what follows it.
CHART_IN_ITS_BOX = """
var box = document.querySelector(arguments[0]);
var svg = box && box.querySelector('.main-svg');
if (!svg || window.innerWidth > 390) { return false; }
var outer = box.getBoundingClientRect(), drawn = svg.getBoundingClientRect();
return outer.height >= arguments[1] && drawn.bottom <= outer.bottom + 1 && Math.abs(drawn.width - outer.width) < 2;
"""


def screenshots(dash_duo, output_dir, name: str, *, widths=WIDTHS, check_fit: bool = False) -> None:
    """Save ``name-<width>.png`` at each width (phone and desktop) for people to look at, then go back to desktop.

    ``SITELENS_SHOT_TAG`` (e.g. ``before``) is added to the names, so two builds' pictures can sit side by side. At
    phone width the page must not scroll sideways.
    """
    import os

    tag = os.environ.get("SITELENS_SHOT_TAG", "")
    driver = dash_duo.driver
    height = driver.get_window_size()["height"]
    for width in widths:
        driver.set_window_size(width, height)
        wait_until(lambda w=width: driver.execute_script("return window.innerWidth") <= w)
        if width < 600:
            # Charts redraw to the new width a moment after the window changes: the picture shows them redrawn.
            # A page that never fits is pictured as it is (the phone test asserts every page fits).
            try:
                wait_until(lambda: page_fits(dash_duo) and driver.execute_script(CHARTS_REDRAWN), 5)
            except AssertionError:
                pass
        suffix = f"-{tag}" if tag else ""
        driver.save_screenshot(str(output_dir / f"{name}-{width}{suffix}.png"))
        if check_fit and width < 600 and not tag:
            wide = driver.execute_script("return document.documentElement.scrollWidth")
            assert page_fits(dash_duo), f"{name} at {width} px is {wide} px wide"
    driver.set_window_size(widths[0], height)


def callback_round_trips(dash_duo) -> int:
    """Dash callback requests the browser made since this page was opened (resource timing)."""
    return dash_duo.driver.execute_script(
        "return performance.getEntriesByType('resource').filter(e => e.name.includes('_dash-update-component')).length;"
    )


def settled(dash_duo, at_least: int = 0, timeout: float = 15) -> int:
    """Wait until at least ``at_least`` callback round trips were made and none is pending; return their number."""
    return (
        wait_until(
            lambda: (count := callback_round_trips(dash_duo)) >= at_least and dash_duo.redux_state_rqs == [] and count,
            timeout,
            "the page's callbacks did not settle",
        )
        or 0
    )


def panel_shows(dash_duo, parameter: str, text: str, timeout: float = 15) -> None:
    """Wait until the overview's ``parameter`` panel lists a row containing ``text``.

    If it never does, the failure says what the panel's card held instead (still loading, empty, or the failure
    view), which callbacks were still pending and what the browser logged, so a failure on a busy machine can be
    told apart from a page that lost its update.
    """
    selector = f"#overview-rows-{parameter}"

    def listed() -> bool:
        return any(text in element.text for element in found_now(dash_duo, selector))

    try:
        wait_until(listed, timeout)
    except AssertionError:
        cards = dash_duo.driver.execute_script(
            "return Array.from(document.querySelectorAll('.overview-panel')).map(c => c.innerText.slice(0, 300));"
        )
        held = f"the panels held {cards}"
        raise AssertionError(f"{selector} never listed {text!r}; {held}; {page_report(dash_duo)}") from None


def page_report(dash_duo) -> str:
    """What a page that never showed what a test waited for was doing: its address and text, the callbacks still
    pending, what the browser logged, and where this process's threads were inside sitelens (the API and the
    dashboard tests serve from threads of the test process), so a failure tells a lost update from a server that
    never answered."""
    parts = []
    try:
        driver = dash_duo.driver
        text = driver.execute_script("return document.body ? document.body.innerText : '';") or ""
        parts.append(f"at {driver.current_url}")
        parts.append(f"the page showed {' '.join(text.split())[:400]!r}")
        pending = [(r.get("status"), str(r.get("output"))[:80]) for r in (dash_duo.redux_state_rqs or [])]
        parts.append(f"pending callbacks {pending}")
        logs = [e.get("message", "")[:300] for e in dash_duo.get_logs() or [] if e.get("level") == "SEVERE"]
        parts.append(f"browser errors {logs}")
    except Exception as failed:  # the browser itself may be what went wrong
        parts.append(f"the browser did not answer ({type(failed).__name__}: {failed})")
    parts.append(f"threads inside sitelens {busy_threads()}")
    return "; ".join(parts)


def busy_threads() -> list[str]:
    """Each thread of this process that is inside sitelens code: its name, the innermost sitelens frame and the
    frame it waits in."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    found = []
    for ident, frame in sys._current_frames().items():
        if ident == threading.get_ident():
            continue
        innermost = f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno} {frame.f_code.co_name}"
        ours = None
        walk = frame
        while walk is not None and ours is None:
            path = walk.f_code.co_filename
            if any(f"/{package}/" in path for package in ("api_backend", "dashboard", "api_client")):
                ours = f"{Path(path).parent.name}/{Path(path).name}:{walk.f_lineno} {walk.f_code.co_name}"
            walk = walk.f_back
        if ours is not None:
            found.append(f"{names.get(ident, ident)}: {ours} (in {innermost})")
    return found


def callback_payload(
    app: Any, outputs: list[tuple[str, str]], inputs: list[tuple[str, str, Any]], state=()
) -> dict[str, Any]:
    """The body of the browser's POST ``/_dash-update-component`` for one callback of the Dash ``app`` (whose page
    callbacks are registered: it has answered a request)."""
    import re

    wanted = "...".join(f"{component}.{prop}" for component, prop in outputs)
    wanted = f"..{wanted}.." if len(outputs) > 1 else wanted
    # An output that allows duplicates carries a "@<hash>" suffix in the callback's key.
    [key] = [k for k in app.callback_map if re.sub(r"@[0-9a-f]+", "", k) == wanted]
    specs = [{"id": c, "property": p} for c, p in outputs]
    return {
        "output": key,
        "outputs": specs if len(outputs) > 1 else specs[0],
        "inputs": [{"id": c, "property": p, "value": v} for c, p, v in inputs],
        "state": [{"id": c, "property": p, "value": v} for c, p, v in state],
        "changedPropIds": [f"{c}.{p}" for c, p, _ in inputs],
    }


def run_callback(app: Any, outputs: list[tuple[str, str]], inputs: list[tuple[str, str, Any]], state=()) -> dict:
    """Run one callback of the Dash ``app`` the way the browser asks for it (POST ``/_dash-update-component``)
    through Flask's test client: no browser, no port. Returns ``{component id: {property: value}}`` of the outputs
    that changed (an output left as it was is missing; ``{}`` when the callback changed nothing)."""
    client = app.server.test_client()
    client.get("/")  # Dash registers the page callbacks on its first request
    response = client.post("/_dash-update-component", json=callback_payload(app, outputs, inputs, state))
    if response.status_code == 204:  # PreventUpdate
        return {}
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()["response"]
