"""The funnel's forms (``query/funnels.py``): each step's rows joined to the sessions of the step before, and one
grouping by ClickHouse's aggregate following the steps in order. On random sessions whose events often share a
timestamp (a step must come strictly later than the one before), with steps that repeat and overlap, each form gives
the counts of a greedy walk through each session's events in Python, on DuckDB and on ClickHouse."""

from __future__ import annotations

import dataclasses
import json
import random
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from api_backend.query.dialect import CLICKHOUSE, DUCKDB, Dialect
from api_backend.query.funnels import build_funnel_query
from api_backend.query.scope import Scope
from api_backend.query.window import Window
from api_backend.routes.funnels import MAX_STEPS
from api_backend.settings import load_settings
from api_backend.store.duckdb import DuckDBEventStore
from api_backend.store.events import rows_to_table
from api_backend.store.open import open_event_store
from tests.support.clickhouse import SECRET, chdb_url, drop_database, fresh_database

START = datetime(2026, 5, 4)
PAGES = ("/", "/pricing", "/signup", "/blog/a")
# Every dialect with each form it has (levels need an aggregate only ClickHouse has).
FORMS = {
    f"{d.name}-{form}": dataclasses.replace(d, funnel_form=form)
    for d in (DUCKDB, CLICKHOUSE)
    for form in ("joins", "levels")
    if form != "levels" or d.name == "clickhouse"
}


def _events(rng: random.Random, sessions: int) -> list[dict[str, Any]]:
    """Sessions of 1-10 events, half of them at the time of the event before."""
    rows = []
    for n in range(sessions):
        at = START + timedelta(hours=rng.randrange(48), milliseconds=rng.randrange(1000))
        for _ in range(rng.randrange(1, 11)):
            if rng.random() < 0.5:
                at += timedelta(milliseconds=rng.choice([1, 500, 60_000]))
            custom = rng.random() < 0.3
            rows.append(
                {
                    "site_id": 1,
                    "timestamp": at,
                    "session_id": f"f{n}",
                    "user_id": f"v{n % 40}",
                    "type": "custom_event" if custom else "pageview",
                    "pathname": rng.choice(PAGES),
                    "event_name": rng.choice(["signup", "other"]) if custom else "",
                }
            )
    return rows


def _matches(row: dict[str, Any], step: dict[str, str]) -> bool:
    if step["type"] == "page":
        return row["type"] == "pageview" and row["pathname"] == step["value"]
    return row["type"] == "custom_event" and row["event_name"] == step["value"]


def _by_hand(rows: list[dict[str, Any]], steps: list[dict[str, str]], window: Window) -> dict[str, int]:
    """Sessions reaching each step: step 1 at a session's first matching event, each next one at its first matching
    event strictly later than the step before."""
    sessions: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if window.start <= row["timestamp"] < window.end:
            sessions[row["session_id"]].append(row)
    reached = [0] * len(steps)
    for events in sessions.values():
        at: datetime | None = None
        for k, step in enumerate(steps):
            times = [e["timestamp"] for e in events if _matches(e, step) and (at is None or e["timestamp"] > at)]
            if not times:
                break
            at = min(times)
            reached[k] += 1
    return {f"s{k}": n for k, n in enumerate(reached, 1)}


def _other_kinds(rng: random.Random, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For a third of the sessions, events of the other kinds a step may name, with properties of each JSON type: in
    random order from the session's first event on, some at the millisecond of the one before."""
    first: dict[str, dict[str, Any]] = {}
    for row in rows:
        first.setdefault(row["session_id"], row)
    extra = []
    for n, row in enumerate(first.values()):
        if n % 3:
            continue
        kinds = [
            ("custom_event", "signup", {"plan": rng.choice(["pro", "free"])}),
            ("button_click", "", {"text": "Buy", "seats": 3}),
            ("outbound", "", {"url": "https://docs.example/a"}),
            ("form_submit", "", {"formName": "signup-form", "trial": True}),
            ("copy", "", {"text": "code"}),
        ]
        at = row["timestamp"]
        for kind, name, props in rng.sample(kinds, len(kinds)):
            at += timedelta(milliseconds=rng.choice([0, 1, 500]))
            extra.append({**row, "timestamp": at, "type": kind, "event_name": name, "props": json.dumps(props)})
    return extra


@pytest.fixture(scope="module")
def stores(chdb_client: Any, chdb_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    rows = _events(random.Random(20261128), 600)
    rows += _other_kinds(random.Random(7), rows)
    name = fresh_database(chdb_client)
    data_dir = tmp_path_factory.mktemp("funnels") / "data"
    settings = load_settings({}, data_dir=str(data_dir), secret_key=SECRET, events_url=chdb_url(chdb_path, name))
    chdb, _ = open_event_store(settings)
    chdb.append(rows_to_table(rows))
    duck = DuckDBEventStore(":memory:")
    duck.append(rows_to_table(rows))
    yield rows, {"duckdb": duck, "clickhouse": chdb}
    chdb.close()
    duck.close()
    drop_database(chdb_client, name)


def _answer(store: Any, d: Dialect, steps: list[dict[str, str]], window: Window) -> dict[str, int]:
    sql, params = d.bind(build_funnel_query(Scope((1,), window), steps, d))
    (row,) = store.query_dicts(sql, params)
    return {key: int(value) for key, value in row.items()}


@pytest.mark.parametrize("seed", range(12))
def test_funnel_forms001_every_form_on_both_engines_equals_a_greedy_walk(stores, seed):
    rows, by_engine = stores
    rng = random.Random(seed)
    options = [{"type": "page", "value": page} for page in PAGES] + [{"type": "event", "value": "signup"}]
    # 1-4 steps, often repeating one (the same page twice must be two visits, the second strictly later).
    steps = [rng.choice(options) for _ in range(rng.randrange(1, 5))]
    start = START + timedelta(hours=rng.randrange(0, 24))
    window = Window(start, start + timedelta(hours=rng.randrange(6, 48)), "UTC", mode="datetime")
    want = _by_hand(rows, steps, window)
    assert want["s1"] > 0
    for form, d in FORMS.items():
        assert _answer(by_engine[d.name], d, steps, window) == want, (form, steps, window)


def test_funnel_forms002_the_most_steps_a_funnel_takes_on_every_form(stores):
    # Twenty steps, two pages in turn: the levels number each row's time by its step among twenty.
    rows, by_engine = stores
    steps = [{"type": "page", "value": PAGES[i % 2]} for i in range(MAX_STEPS)]
    window = Window(START, START + timedelta(days=3), "UTC", mode="datetime")
    want = _by_hand(rows, steps, window)
    assert want["s4"] > 0 and want[f"s{MAX_STEPS}"] == 0  # sessions of at most ten events
    for form, d in FORMS.items():
        assert _answer(by_engine[d.name], d, steps, window) == want, form


def test_funnel_forms003_steps_of_every_kind_count_the_same_in_each_form(stores):
    # Every step type, with a value pattern and properties of each JSON type: each form takes the steps' conditions as
    # the joins on DuckDB do.
    _, by_engine = stores
    steps = [
        {"type": "page", "value": "/**"},
        {"type": "event", "value": "signup", "eventPropertyKey": "plan", "eventPropertyValue": "pro"},
        {"type": "button_click", "value": "Bu*", "propertyFilters": [{"key": "seats", "value": 3}]},
        {"type": "outbound", "value": "https://docs.example/**"},
        {"type": "form_submit", "value": "signup-form", "propertyFilters": [{"key": "trial", "value": True}]},
        {"type": "copy", "value": "code"},
    ]
    window = Window(START, START + timedelta(days=3), "UTC", mode="datetime")
    want = _answer(by_engine["duckdb"], DUCKDB, steps, window)
    assert want["s2"] > want["s4"] > 0, want
    for form, d in FORMS.items():
        assert _answer(by_engine[d.name], d, steps, window) == want, form
