"""The read result cache: repeated reads are answered from it, and never hide an acknowledged write.

Numbers are checked against truth counted here in Python from the generated events.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from api_backend.query.dialect import DUCKDB
from api_backend.query.sql import Query
from api_backend.read.results import ResultCache, SharedResults
from api_backend.routes.read_params import ReadParams
from api_backend.store.events import rows_to_table
from tests.support import make_site, wait_until

pytestmark = pytest.mark.both_stores

WINDOW = {"start_date": "2026-05-01", "end_date": "2026-05-31", "time_zone": "UTC"}
PATHS = ["/", "/pricing", "/docs/a"]


def _rows(site_id: int, sessions: int, start: datetime, prefix: str = "s") -> list[dict[str, Any]]:
    """``sessions`` sessions of 1-3 pageviews, two hours apart from ``start``."""
    rows = []
    for n in range(sessions):
        when = start + timedelta(hours=2 * n)
        for i in range(n % 3 + 1):
            rows.append(
                {
                    "site_id": site_id,
                    "session_id": f"{prefix}{n}",
                    "user_id": f"v{prefix}{n % 7}",
                    "timestamp": when + timedelta(minutes=i),
                    "type": "pageview",
                    "pathname": PATHS[(n + i) % len(PATHS)],
                }
            )
    return rows


def _truth(rows: list[dict[str, Any]]) -> dict[str, int]:
    return {
        "sessions": len({r["session_id"] for r in rows}),
        "pageviews": len(rows),
        "users": len({r["user_id"] for r in rows}),
    }


def _overview(client, owner, site_id: int) -> dict[str, int]:
    response = client.get(f"/api/sites/{site_id}/overview", params=WINDOW, headers=owner.headers)
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    return {k: data[k] for k in ("sessions", "pageviews", "users")}


def _pricing_sessions(client, owner, site_id: int) -> int:
    response = client.get(
        f"/api/sites/{site_id}/metric", params={**WINDOW, "parameter": "pathname"}, headers=owner.headers
    )
    assert response.status_code == 200, response.text
    return next(r["count"] for r in response.json()["data"]["data"] if r["value"] == "/pricing")


@pytest.fixture
def seeded(services, site):
    rows = _rows(site.site_id, 60, datetime(2026, 5, 2, 8))
    services.events.append(rows_to_table(rows))
    return site, rows


def test_cache001_repeated_read_is_answered_from_the_cache(client, owner, services, seeded):
    site, rows = seeded
    first = _overview(client, owner, site.site_id)
    assert first == _truth(rows)
    cache = services.reader.results
    assert cache.computed == 1
    # A second identical read reuses the answer; a different question computes one.
    assert _overview(client, owner, site.site_id) == first
    assert cache.computed == 1
    _pricing_sessions(client, owner, site.site_id)
    assert cache.computed == 2


@pytest.mark.parametrize("path", ["writer", "append"])
def test_cache002_read_after_acknowledged_write_sees_it(client, owner, services, seeded, path):
    site, rows = seeded
    before = _overview(client, owner, site.site_id)
    pricing_before = _pricing_sessions(client, owner, site.site_id)
    new = _rows(site.site_id, 2, datetime(2026, 5, 30, 9), prefix="late")
    new[0]["pathname"] = "/pricing"
    if path == "writer":
        services.writer.write(new)  # returns once committed: the acknowledgement a tracking route waits for
    else:
        services.events.append(rows_to_table(new))
    after = _overview(client, owner, site.site_id)
    assert after == _truth(rows + new)
    assert after["sessions"] == before["sessions"] + 2
    pricing = {r["session_id"] for r in rows + new if r["pathname"] == "/pricing"}
    assert pricing_before == len({r["session_id"] for r in rows if r["pathname"] == "/pricing"})
    assert _pricing_sessions(client, owner, site.site_id) == len(pricing) > pricing_before


def test_cache003_events_outside_the_window_keep_the_entry(client, owner, services, seeded):
    site, rows = seeded
    # On ClickHouse the overview reads the sessions table only for a window holding at least twice as many events as
    # the site has rows there (``facts.facts_where_cheaper``), and the cache keys the form picked. A longer first
    # session keeps May's events above that mark once June's sessions are in, so both reads pick the same form.
    longer = [{**rows[0], "timestamp": rows[0]["timestamp"] + timedelta(seconds=10 + i)} for i in range(20)]
    services.events.append(rows_to_table(longer))
    rows = rows + longer
    first = _overview(client, owner, site.site_id)
    cache = services.reader.results
    computed = cache.computed
    services.events.append(rows_to_table(_rows(site.site_id, 3, datetime(2026, 6, 2, 9), prefix="june")))
    assert _overview(client, owner, site.site_id) == first == _truth(rows)
    assert cache.computed == computed  # the June events did not change May's key


def test_cache010_a_range_ending_today_is_answered_from_the_cache_within_its_minute(client, owner, services, site):
    """A range ending today ends with the current minute: the requests of one minute ask one question, answered from
    the cache until an event enters the window, and an event written meanwhile is in the next answer."""

    def now() -> datetime:
        return datetime.now(UTC).replace(tzinfo=None)

    def today() -> dict[str, int]:
        day = now().date().isoformat()
        params = {"start_date": day, "end_date": day, "time_zone": "UTC"}
        response = client.get(f"/api/sites/{site.site_id}/overview", params=params, headers=owner.headers)
        assert response.status_code == 200, response.text
        data = response.json()["data"]
        return {k: data[k] for k in ("sessions", "pageviews", "users")}

    def event(name: str) -> list[dict[str, Any]]:
        # Stamped now, as ingestion stamps (a second or so back, so a write just after midnight stays today).
        when = max(now() - timedelta(seconds=1), now().replace(hour=0, minute=0, second=0, microsecond=0))
        return [{"site_id": site.site_id, "session_id": name, "user_id": name, "timestamp": when, "type": "pageview"}]

    services.writer.write(event("a"))
    cache = services.reader.results
    for _ in range(5):  # two reads within one minute: a read that met the next minute asked another question
        minute = now().replace(second=0, microsecond=0)
        first = today()
        computed = cache.computed
        again = today()
        if now().replace(second=0, microsecond=0) == minute:
            break
    assert first == again == {"sessions": 1, "pageviews": 1, "users": 1}
    assert cache.computed == computed
    services.writer.write(event("b"))
    assert today() == {"sessions": 2, "pageviews": 2, "users": 2}


def test_cache004_concurrent_misses_share_one_run_and_errors_are_not_kept():
    window = ReadParams(**WINDOW).window()
    cache = ResultCache(DUCKDB)
    gate = threading.Event()
    calls: list[str] = []

    def run(query: Query) -> list[dict[str, Any]]:
        if query.sql.startswith("SELECT count(*) AS n"):
            return [{"n": 5}]
        calls.append(query.sql)
        gate.wait(5)
        return [{"x": 1}]

    query = Query("SELECT 1 AS x", {})
    results: list[list[dict[str, Any]]] = []
    threads = [threading.Thread(target=lambda: results.append(cache.run(query, (1,), window, run))) for _ in range(4)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join(5)
    assert results == [[{"x": 1}]] * 4 and len(calls) == 1
    # Callers get copies: changing one result does not change what the next caller gets.
    results[0][0]["x"] = 2
    assert cache.run(query, (1,), window, run) == [{"x": 1}]

    def fail(q: Query) -> list[dict[str, Any]]:
        if q.sql.startswith("SELECT count(*) AS n"):
            return [{"n": 6}]
        raise RuntimeError("engine down")

    with pytest.raises(RuntimeError):
        cache.run(query, (1,), window, fail)
    assert cache.run(query, (1,), window, lambda q: [{"n": 6}] if "count" in q.sql else [{"x": 3}]) == [{"x": 3}]


def test_cache009_peek_gives_only_computed_fresh_values_and_put_keeps_what_the_cache_would(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    shared: SharedResults[list[int]] = SharedResults(ttl=10.0, max_entries=2, keep=lambda rows: len(rows) < 3)
    assert shared.peek("a") is None  # nothing computed, and peeking computes nothing
    assert shared.get("a", lambda: [1]) == [1] and shared.peek("a") == [1]
    with pytest.raises(RuntimeError):
        shared.get("b", lambda: (_ for _ in ()).throw(RuntimeError("down")))
    assert shared.peek("b") is None  # a failed computation is not a value
    shared.put("c", [1, 2, 3])  # refused by ``keep``, as ``get`` would refuse it
    assert shared.peek("c") is None
    shared.put("d", [4])
    assert shared.peek("d") == [4]
    now[0] += 11
    assert shared.peek("a") is None and shared.peek("d") is None  # older than the TTL
    shared.put("e", [5])
    shared.put("f", [6])
    shared.put("g", [7])  # at most two kept: the least recently used leaves
    assert (shared.peek("e"), shared.peek("f"), shared.peek("g")) == (None, [6], [7])


def test_cache005_org_usage_sees_an_acknowledged_write(client, owner, services, seeded):
    site, rows = seeded

    def pageviews_on_may_30() -> int:
        response = client.get(f"/api/org-event-count/{site.organization_id}", params=WINDOW, headers=owner.headers)
        assert response.status_code == 200, response.text
        day = next(d for d in response.json()["data"] if d["event_date"] == "2026-05-30")
        return day["pageview_count"]

    expected = sum(1 for r in rows if r["timestamp"].date().isoformat() == "2026-05-30")
    assert pageviews_on_may_30() == expected
    assert pageviews_on_may_30() == expected  # the repeated read, from the cache
    new = _rows(site.site_id, 1, datetime(2026, 5, 30, 9), prefix="late")
    services.writer.write(new)
    assert pageviews_on_may_30() == expected + len(new)


def test_cache006_a_deleted_sites_answers_never_reach_a_new_site_given_its_id(client, owner, services, seeded):
    site, rows = seeded
    assert _overview(client, owner, site.site_id) == _truth(rows)
    assert client.delete(f"/api/sites/{site.site_id}", headers=owner.headers).status_code == 200
    reborn = make_site(services, owner, "reborn.example.com")
    assert reborn.site_id == site.site_id  # the metadata database hands out the freed id again
    # Same number of events in the window (so the same count key), different events.
    other = _rows(reborn.site_id, 60, datetime(2026, 5, 2, 8), prefix="new")
    for row in other:
        row["user_id"] = "one visitor"
    services.events.append(rows_to_table(other))
    assert _overview(client, owner, reborn.site_id) == _truth(other) != _truth(rows)


def test_cache007_error_routes_see_an_acknowledged_write(client, owner, services, seeded):
    site, _ = seeded
    error = {"site_id": site.site_id, "session_id": "err", "user_id": "v", "type": "error", "event_name": "TypeError"}
    error["props"] = '{"message": "x is undefined", "stack": "at f (app.js:1:1)"}'
    services.writer.write([{**error, "timestamp": datetime(2026, 5, 3, 10)}])
    base = f"/api/sites/{site.site_id}/error"

    def counts() -> tuple[int, int, int]:
        names = client.get(f"{base}-names", params=WINDOW, headers=owner.headers)
        events = client.get(
            f"{base}-events", params={**WINDOW, "errorMessage": "x is undefined"}, headers=owner.headers
        )
        series = client.get(
            f"{base}-bucketed", params={**WINDOW, "errorMessage": "x is undefined", "bucket": "day"},
            headers=owner.headers,
        )  # fmt: skip
        for response in (names, events, series):
            assert response.status_code == 200, response.text
        return (
            sum(r["count"] for r in names.json()["data"]),
            len(events.json()["data"]),
            sum(p["error_count"] for p in series.json()["data"]),
        )

    assert counts() == (1, 1, 1)
    assert counts() == (1, 1, 1)  # repeated: from the cache
    services.writer.write([{**error, "timestamp": datetime(2026, 5, 20, 10)}])
    assert counts() == (2, 2, 2)


def test_cache008_the_daily_series_counts_sessions_crossing_midnight_and_caches_by_its_question(
    client, owner, services, site
):
    """On DuckDB the series is narrowed (the crossing sessions' spans first, then their events in them): the
    numbers are the hand-counted ones on both stores, a repeat is cached by the question, and a write of another
    crossing session is seen by the next read."""

    def session(name: str, user: str, times: list[datetime]) -> list[dict[str, Any]]:
        return [
            {"site_id": site.site_id, "session_id": name, "user_id": user, "timestamp": t, "type": "pageview"}
            for t in times
        ]

    night = datetime(2026, 5, 10, 23, 50)
    services.events.append(
        rows_to_table(
            session("a", "u1", [night, night + timedelta(minutes=5), night + timedelta(minutes=15)])
            + session("b", "u2", [night + timedelta(hours=10)])
            + session("c", "u1", [night + timedelta(days=1, minutes=12)])
        )
    )

    def series() -> list[tuple[int, int, int]]:
        response = client.get(
            f"/api/sites/{site.site_id}/overview/time-series",
            params={"start_date": "2026-05-10", "end_date": "2026-05-12", "time_zone": "UTC", "bucket": "day"},
            headers=owner.headers,
        )
        assert response.status_code == 200, response.text
        return [(item["sessions"], item["pageviews"], item["users"]) for item in response.json()["data"]]

    # a starts on the 10th (two pageviews there, one on the 11th); b is on the 11th, c on the 12th; d, written
    # later, crosses from the 11th into the 12th.
    assert series() == [(1, 2, 1), (1, 2, 2), (1, 1, 1)]
    cache = services.reader.results
    computed = cache.computed
    assert series() == [(1, 2, 1), (1, 2, 2), (1, 1, 1)]
    assert cache.computed == computed
    services.writer.write(
        session("d", "u3", [night + timedelta(days=1, minutes=1), night + timedelta(days=1, minutes=20)])
    )
    assert series() == [(1, 2, 1), (2, 3, 3), (1, 2, 2)]


def test_cache011_a_page_of_sessions_and_its_description_share_one_count(client, owner, services, seeded, monkeypatch):
    """The sessions list and a goal's sessions take a page, then describe its sessions from their events: one count
    of the window per request keys both answers, a repeat is answered from the cache after that one count, and an
    acknowledged write into the window has the next request compute both afresh and list the new session first."""
    site, rows = seeded
    goal = {"name": "Pricing", "goalType": "path", "config": {"pathPattern": "/pricing"}}
    response = client.post(f"/api/sites/{site.site_id}/goals", json=goal, headers=owner.headers)
    assert response.status_code == 201, response.text
    goal_id = response.json()["goalId"]
    reader, cache = services.reader, services.reader.results
    # Where the store keeps goal bits, a goal's sessions read them once kept (another question of the cache).
    wait_until(lambda: not reader.storing_goal_bits(), message="the goal bits were not kept")
    counted: list[int] = []
    version = cache.version
    monkeypatch.setattr(cache, "version", lambda *args: counted.append(1) or version(*args))
    pages = {
        "sessions": (f"/api/sites/{site.site_id}/sessions", {r["session_id"] for r in rows}),
        "goal": (
            f"/api/sites/{site.site_id}/goals/{goal_id}/sessions",
            {r["session_id"] for r in rows if r["pathname"] == "/pricing"},
        ),
    }

    def listed(path: str) -> tuple[int, list[str]]:
        response = client.get(path, params={**WINDOW, "limit": 100}, headers=owner.headers)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["data"], path
        return body["totalCount"], [s["session_id"] for s in body["data"]]

    for path, expected in pages.values():
        counted.clear()
        computed = cache.computed
        first = listed(path)
        assert first[0] == len(expected) and set(first[1]) == expected
        assert (len(counted), cache.computed) == (1, computed + 2), path
        assert listed(path) == first
        assert (len(counted), cache.computed) == (2, computed + 2), path
    late = _rows(site.site_id, 1, datetime(2026, 5, 30, 9), prefix="late")
    late[0]["pathname"] = "/pricing"
    services.writer.write(late)
    for path, expected in pages.values():
        counted.clear()
        computed = cache.computed
        total, ids = listed(path)
        assert (total, ids[0], set(ids)) == (len(expected) + 1, "late0", expected | {"late0"})
        assert (len(counted), cache.computed) == (1, computed + 2), path
