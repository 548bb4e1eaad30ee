"""Dashboard page times in headless Chromium: from navigation start to the overview's headline numbers / goals table /
errors list on screen.

A script installed before every document (Chrome DevTools ``Page.addScriptToEvaluateOnNewDocument``) watches the
DOM and records ``performance.now()`` (milliseconds since navigation start) when the page's data first appears, so
the figure excludes WebDriver's own polling.

- **first view**: a fresh sign-in (a new token, so the dashboard's server-side response cache has nothing for it),
  an emptied browser cache and a cold API: each first view asks for a window no earlier request asked for (its start
  moved one more day before the seeded data, so the numbers are the same but the API's result cache has no answer
  and every route runs its own query), then the page is opened.
- **cached**: the same page opened again right after (browser assets and the dashboard's API responses cached),
  once the first view is complete. Otherwise the first view's last requests (the goals page's overview strip, the
  errors page's sparklines, on a cold API cache) would still run on the server, sharing its cores with the
  cached view: that added about 200 ms to the goals page's cached view at 10M events.
- **complete** (pages in ``COMPLETE``): the same clock until everything the page loads on opening is on screen
  (the overview's chart, its four panels and its goals; the goals table and the strip; the error groups, their
  sparklines and the strip), where ``first`` stops at the first data.
- **open an error group**: on the errors page, a click on a group until its first occurrence is on screen, timed in
  the page (``performance.now()`` at the click to the first frame that shows the group's message and an occurrence).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from typing import Any

from bench.accounts import BENCH_EMAIL, BENCH_PASSWORD, BenchAccount
from bench.server import ServerProcess
from bench.stats import summarize

__all__ = ["COMPLETE", "PAGES", "open_error_groups", "run_dashboard"]

# page name -> (path, CSS selector of the data being on screen)
PAGES: dict[str, tuple[str, str]] = {
    "overview": ("/overview", ".overview-loaded"),
    "goals": ("/goals", "#goals-table tbody tr"),
    "errors": ("/errors", "#errors-groups button.error-group"),
}
# page name -> (CSS selector, how many must be on screen), all of them, for the page being complete
COMPLETE: dict[str, list[tuple[str, int]]] = {
    # the chart's lines, and four panels and the goals (each a panel-rows once its data came)
    "overview": [("#overview-chart .scatterlayer .trace", 1), (".overview-panels .panel-rows", 5)],
    # the table, and the overview strip above it (a first view loads the strip after the table)
    "goals": [("#goals-table tbody tr", 1), ("#frame-overview .stats-loaded", 1)],
    # the groups with their sparklines, and the overview strip
    "errors": [
        ("#errors-groups button.error-group", 1),
        ("#errors-groups .spark-bar", 1),
        ("#frame-overview .stats-loaded", 1),
    ],
}

_WATCH = """
(function () {
  const want = %s;
  const marks = {};
  window.__benchMarks = marks;
  const check = () => {
    for (const [name, needs] of Object.entries(want)) {
      if (name in marks) continue;
      if (needs.every(([selector, count]) => document.querySelectorAll(selector).length >= count)) {
        marks[name] = performance.now();
      }
    }
  };
  new MutationObserver(check).observe(document, {childList: true, subtree: true});
})();
"""


def _driver() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(flag)
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary:
        options.binary_location = binary
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    return webdriver.Chrome(service=Service(driver_path), options=options)


def _sign_in(driver: Any, base: str, timeout: float = 30) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(base + "/login")
    wait = WebDriverWait(driver, timeout)
    wait.until(ec.presence_of_element_located((By.ID, "login-email"))).send_keys(BENCH_EMAIL)
    driver.find_element(By.ID, "login-password").send_keys(BENCH_PASSWORD)
    driver.find_element(By.ID, "login-submit").click()
    wait.until(lambda d: "/login" not in d.current_url)


def _open(driver: Any, url: str, name: str, timeout: float = 60) -> float | None:
    """Open ``url``; seconds from navigation start until the page's data is on screen (None on timeout)."""
    driver.get(url)
    return _mark(driver, name, timeout)


def _mark(driver: Any, name: str, timeout: float = 60) -> float | None:
    """Seconds from navigation start until the page's mark ``name`` was recorded (None on timeout)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        mark = driver.execute_script("return (window.__benchMarks || {})[arguments[0]];", name)
        if mark is not None:
            return float(mark) / 1000
        time.sleep(0.02)
    return None


# Set up in the page before a click: resolves with milliseconds from the click to the first frame showing the
# group's message in the detail and at least one occurrence under it.
_TIME_GROUP_OPEN = """
const row = arguments[0], done = arguments[arguments.length - 1];
const message = row.querySelector('.error-message').textContent;
row.scrollIntoView({block: 'center'});
const start = performance.now();
const poll = () => {
  const head = document.querySelector('#errors-detail .error-detail-message');
  const first = document.querySelector('#errors-occurrences .occurrence');
  if (head && first && head.textContent === message) { done(performance.now() - start); return; }
  if (performance.now() - start > 30000) { done(null); return; }
  requestAnimationFrame(poll);
};
row.click();
requestAnimationFrame(poll);
"""


def open_error_groups(driver: Any, url: str, clicks: int = 8) -> list[float]:
    """Open the errors page at ``url`` and click its groups in turn: seconds from each click to the first occurrence.

    The page is left to settle (sparklines drawn) before the first click, as a person would see it.
    """
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url)
    WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#errors-groups .spark-bar"))
    driver.set_script_timeout(40)
    times: list[float] = []
    for index in range(clicks):
        rows = driver.find_elements(By.CSS_SELECTOR, "#errors-groups button.error-group")
        if not rows:
            break
        elapsed = driver.execute_async_script(_TIME_GROUP_OPEN, rows[index % len(rows)])
        if elapsed is not None:
            times.append(float(elapsed) / 1000)
    return times


def run_dashboard(
    server: ServerProcess, account: BenchAccount, *, runs: int = 5, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Time each dashboard page ``runs`` times in both modes."""
    out: dict[str, Any] = {
        "method": (
            "Headless Chromium (Debian) driven by Selenium against `sitelens serve` (dashboard and API in one "
            "process). Time = navigation start to the first data row in the DOM (a MutationObserver records "
            "`performance.now()`). "
            "First view = new sign-in token (empty dashboard response cache), an emptied browser cache and a window "
            "no request asked for before (empty API result cache: its start moves a day earlier each time, before "
            "the seeded data, so the numbers stay the same); cached = the same page opened again once the first view "
            "is complete (everything it loads on screen). "
            "Window: the seeded site's 30 days."
        ),
        "pages": {},
        "notes": [],
    }
    try:
        driver = _driver()
    except Exception as exc:  # no browser on this machine: report, do not fail the whole run
        out["notes"].append(f"no browser available: {str(exc).splitlines()[0]}")
        return out
    try:
        driver.execute_cdp_cmd("Network.enable", {})
        want = {name: [(selector, 1)] for name, (_, selector) in PAGES.items()}
        want |= {f"{name} complete": needs for name, needs in COMPLETE.items()}
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": _WATCH % _json(want)})
        fresh_windows = iter(range(1, 10_000))  # days moved back: every first view gets a window never asked for

        def cold_url(path: str) -> str:
            start, end = _window(next(fresh_windows))
            return f"{server.base_url}{path}?site={account.site_id}&start_date={start}&end_date={end}&time_zone=UTC"

        for name, (path, _selector) in PAGES.items():
            url = cold_url(path)
            first: list[float] = []
            cached: list[float] = []
            complete: dict[str, list[float]] = {"first": [], "cached": []}
            calls: list[tuple[int, float, float]] = []
            failures = 0
            log(f"  dashboard {name}: {runs} first views and {runs} cached views")
            for _ in range(runs):
                driver.execute_cdp_cmd("Network.clearBrowserCache", {})
                _sign_in(driver, server.base_url)
                url = cold_url(path)
                seconds = _open(driver, url, name)
                if seconds is None:
                    failures += 1
                    continue
                first.append(seconds)
                if name in COMPLETE and (done := _mark(driver, f"{name} complete")) is not None:
                    complete["first"].append(done)
                seconds = _open(driver, url, name)
                if seconds is None:
                    failures += 1
                    continue
                cached.append(seconds)
                if name in COMPLETE and (done := _mark(driver, f"{name} complete")) is not None:
                    complete["cached"].append(done)
                calls.append(_callback_requests(driver))
            if not first or not cached:
                out["notes"].append(f"the {name} page never showed its data within 60 s ({failures} time-outs)")
                continue
            out["pages"][name] = {
                "path": path,
                "url": url.replace(server.base_url, ""),
                "first": summarize(first),
                "cached": summarize(cached),
                "timeouts": failures,
                **{f"{mode}_complete": summarize(times) for mode, times in complete.items() if times},
                "cached_callbacks": {
                    "requests": [c[0] for c in calls],
                    "server_ms_total": [round(c[1], 1) for c in calls],
                    "last_response_end_ms": [round(c[2], 1) for c in calls],
                },
            }
            page = out["pages"][name]
            log(
                f"    first {page['first']['median'] * 1000:.0f} ms, cached {page['cached']['median'] * 1000:.0f} ms"
                + "".join(
                    f", {mode} complete {page[mode + '_complete']['median'] * 1000:.0f} ms"
                    for mode in ("first", "cached")
                    if mode + "_complete" in page
                )
            )
            if name == "errors":
                # A window never asked for: the first group opened runs the error-events query cold.
                opened = open_error_groups(driver, cold_url(path), clicks=max(runs, 8))
                if opened:
                    summary = summarize(opened)
                    out["pages"][name]["open_group"] = summary
                    out["notes"].append(
                        f"errors page, opening a group (click to its first occurrence on screen): "
                        f"p50 {summary['median'] * 1000:.0f} ms, max {summary['max'] * 1000:.0f} ms "
                        f"over {summary['n']} clicks"
                    )
                    log(f"    open a group: p50 {summary['median'] * 1000:.0f} ms, max {summary['max'] * 1000:.0f} ms")
    finally:
        driver.quit()
    return out


def _callback_requests(driver: Any) -> tuple[int, float, float]:
    """Dash callback round trips of the page just shown: (count, summed duration ms, end of the last one ms)."""
    entries = driver.execute_script(
        "return performance.getEntriesByType('resource')"
        ".filter(e => e.name.includes('_dash-update-component'))"
        ".map(e => [e.duration, e.responseEnd]);"
    )
    if not entries:
        return 0, 0.0, 0.0
    return len(entries), float(sum(e[0] for e in entries)), float(max(e[1] for e in entries))


def _json(value: Any) -> str:
    import json

    return json.dumps(value)


def _window(days_earlier: int = 0) -> tuple[str, str]:
    """The 30 seeded days (the read block's window), its start moved ``days_earlier`` days before the seeded data."""
    from datetime import UTC, datetime, timedelta

    now = datetime.now(UTC).replace(tzinfo=None, hour=0, minute=0, second=0, microsecond=0)
    start = now - timedelta(days=30 + days_earlier)
    return start.date().isoformat(), (now - timedelta(days=1)).date().isoformat()
