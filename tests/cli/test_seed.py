"""The synthetic traffic generator: exact counts, realistic structure, agreement with ingestion, reproducibility."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from urllib.parse import parse_qsl

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from api_backend import seed
from api_backend.ingest.channels import classify_channel
from api_backend.ingest.payload import parse_event
from api_backend.seed import SESSION_GAP_MS, generate_events, write_events
from api_backend.store.duckdb import DuckDBEventStore
from api_backend.store.events import EVENT_SCHEMA, EVENT_TYPES
from api_backend.store.writer import BatchWriter

NOW = datetime(2026, 3, 1, 12, 0)
SITE = 7
DOMAIN = "shop.example.org"


@pytest.fixture(scope="module")
def events() -> pd.DataFrame:
    tables = list(generate_events(SITE, 120_000, 30, 11, now=NOW, domain=DOMAIN, chunk_rows=25_000))
    frame = pa.concat_tables(tables).to_pandas()
    return frame.sort_values(["session_id", "timestamp"], kind="stable").reset_index(drop=True)


@pytest.fixture(scope="module")
def sessions(events: pd.DataFrame) -> pd.DataFrame:
    first = events.groupby("session_id").head(1).set_index("session_id")
    grouped = events.groupby("session_id")
    return pd.DataFrame(
        {
            "user_id": first["user_id"],
            "channel": first["channel"],
            "start": grouped["timestamp"].min(),
            "end": grouped["timestamp"].max(),
            "users": grouped["user_id"].nunique(),
            "events": grouped.size(),
            "signup": events[(events.type == "custom_event") & (events.event_name == "signup")]
            .groupby("session_id")
            .size()
            .reindex(first.index, fill_value=0)
            > 0,
        }
    )


@pytest.mark.parametrize(("n", "chunk_rows"), [(1, 100), (7, 100), (1_000, 100), (25_001, 10_000)])
def test_seed001_exact_count_in_whole_session_chunks(n: int, chunk_rows: int) -> None:
    tables = list(generate_events(1, n, 5, 3, now=NOW, chunk_rows=chunk_rows))
    assert sum(t.num_rows for t in tables) == n
    assert all(t.schema == EVENT_SCHEMA for t in tables)
    # A session never spans two tables, so each table can be committed on its own.
    seen: set[str] = set()
    for table in tables:
        ids = set(table.column("session_id").to_pylist())
        assert not ids & seen
        seen |= ids
    if n >= 1_000:
        assert len(tables) > 1


def test_seed002_every_type_and_pageviews_dominate(events: pd.DataFrame) -> None:
    assert len(events) == 120_000
    assert (events.site_id == SITE).all()
    counts = events.type.value_counts()
    assert set(counts.index) == set(EVENT_TYPES)
    assert counts["pageview"] > 0.5 * len(events)
    assert counts.min() > 500
    assert set(events.hostname) == {DOMAIN, f"www.{DOMAIN}"}


def test_seed003_time_window_and_rhythm(events: pd.DataFrame) -> None:
    assert events.timestamp.max() <= pd.Timestamp(NOW)
    assert events.timestamp.min() >= pd.Timestamp(NOW - timedelta(days=30))
    by_hour = events.timestamp.dt.hour.value_counts()
    assert by_hour[14] > 2 * by_hour[3]  # afternoon UTC is busy, the small hours are quiet
    days = events.timestamp.dt.normalize()
    full_days = events[(days > days.min()) & (days < days.max())]
    per_day = full_days.groupby(full_days.timestamp.dt.normalize()).size()
    weekend = per_day[per_day.index.dayofweek >= 5].mean()
    weekday = per_day[per_day.index.dayofweek < 5].mean()
    assert weekday > 1.3 * weekend


def test_seed004_sessions_respect_thirty_minutes(events: pd.DataFrame, sessions: pd.DataFrame) -> None:
    assert (sessions.users == 1).all()
    gaps = events.groupby("session_id").timestamp.diff().dropna()
    assert (gaps > pd.Timedelta(0)).all()
    assert (gaps < pd.Timedelta(milliseconds=SESSION_GAP_MS)).all()
    ordered = sessions.sort_values(["user_id", "start"])
    same_user = ordered.user_id.eq(ordered.user_id.shift())
    between = (ordered.start - ordered.end.shift())[same_user]
    assert len(between) > 1_000  # visitors come back ...
    assert (between >= pd.Timedelta(milliseconds=SESSION_GAP_MS)).all()  # ... in a new session
    first_types = events.groupby("session_id").type.first()
    assert (first_types == "pageview").all()
    per_user = sessions.groupby("user_id").size()
    assert (per_user == 1).mean() > 0.5
    assert (per_user >= 3).sum() > 100
    assert sessions.events.max() > 10 and (sessions.events == 1).mean() > 0.2


def test_seed005_referrer_and_utm_only_on_the_landing_event(events: pd.DataFrame) -> None:
    first = ~events.session_id.duplicated()
    later = events[~first]
    for column in ("referrer", "channel", "querystring", "utm_source", "utm_medium", "utm_campaign", "utm_term"):
        assert (later[column] == "").all(), column
    assert (later.url_parameters == "{}").all()
    landing = events[first]
    assert (landing.referrer != "").mean() > 0.4
    assert (landing.utm_source != "").sum() > 1_000
    tagged = landing[landing.querystring != ""]
    for row in tagged.head(200).itertuples():
        params = json.loads(row.url_parameters)
        assert params == dict(parse_qsl(row.querystring.removeprefix("?")))
        assert params["utm_source"] == row.utm_source


def test_seed006_channels_are_what_ingestion_would_store(events: pd.DataFrame) -> None:
    landing = events[~events.session_id.duplicated()]
    combos = landing[["referrer", "querystring", "hostname", "channel"]].drop_duplicates()
    for row in combos.itertuples():
        utm = {k.lower(): v for k, v in parse_qsl(row.querystring.removeprefix("?"))}
        assert classify_channel(row.referrer, utm, row.hostname) == row.channel, row
    expected = {"", "Organic Search", "Paid Search", "Organic Social", "Paid Social", "Email", "Referral", "AI"}
    assert expected <= set(landing.channel)


def test_seed007_conversion_rates_differ_by_channel(events: pd.DataFrame, sessions: pd.DataFrame) -> None:
    rates = sessions.groupby("channel").signup.mean()
    assert rates["Paid Search"] > 2.5 * rates["Organic Social"]
    assert rates["Email"] > rates["Organic Search"]
    purchases = events[(events.type == "custom_event") & (events.event_name == "purchase")]
    assert len(purchases) > 50
    props = purchases.props.map(json.loads)
    assert {"plan", "amount", "currency"} <= set(props.iloc[0])
    assert set(props.map(lambda p: p["plan"])) == {"pro", "starter", "business"}
    # A purchase comes after the signup and the checkout page of the same session.
    for session_id in purchases.session_id.head(30):
        session = events[events.session_id == session_id]
        names = list(session.event_name)
        assert names.index("signup") < names.index("purchase")
        assert "/checkout" in set(session.pathname[session.type == "pageview"])


def test_seed008_site_map_and_entry_pages(events: pd.DataFrame) -> None:
    pageviews = events[events.type == "pageview"]
    paths = set(pageviews.pathname)
    assert {"/", "/pricing", "/signup", "/checkout", "/account", "/blog"} <= paths
    assert any(p.startswith("/blog/") for p in paths)
    assert any(p.count("/") == 3 and p.startswith("/docs/") for p in paths)
    entries = events[~events.session_id.duplicated()].pathname
    top = entries.value_counts(normalize=True)
    assert top.index[0] == "/"
    assert entries.str.startswith("/blog/").mean() > 0.1
    assert (pageviews.page_title != "").all()
    titles = pageviews.groupby("pathname").page_title.nunique()
    assert (titles == 1).all()
    # Non-pageview events happen on the page the session is on.
    assert events.pathname.isin(paths).all()


def test_seed009_errors_recur_with_stacks(events: pd.DataFrame) -> None:
    errors = events[events.type == "error"]
    props = errors.props.map(json.loads)
    messages = props.map(lambda p: p["message"])
    assert 4 <= messages.nunique() <= 8
    assert messages.value_counts().iloc[0] > 3 * messages.value_counts().iloc[-1]
    for name, p in zip(errors.event_name, props, strict=True):
        assert set(p) == {"message", "stack", "fileName", "lineNumber", "columnNumber"}
        assert p["stack"].startswith(f"{name}: {p['message']}\n    at ")
        assert p["stack"].count("\n") >= 1
        assert p["fileName"].startswith(f"https://{DOMAIN}/assets/")
        assert isinstance(p["lineNumber"], int) and isinstance(p["columnNumber"], int)
    assert {"TypeError", "ReferenceError"} <= set(errors.event_name)


def test_seed010_error_message_count_is_configurable() -> None:
    table = pa.concat_tables(list(generate_events(1, 300_000, 30, 5, now=NOW, error_messages=20)))
    errors = table.filter(pa.compute.equal(table.column("type"), "error")).column("props").to_pylist()
    assert len({json.loads(p)["message"] for p in errors}) == 20


def test_seed011_web_vitals_only_on_performance_events(events: pd.DataFrame) -> None:
    vitals = ["lcp", "cls", "inp", "fcp", "ttfb"]
    others = events[events.type != "performance"]
    assert others[vitals].isna().all().all()
    perf = events[events.type == "performance"]
    assert perf[["lcp", "cls", "fcp", "ttfb"]].notna().all().all()
    assert 0.5 < perf.inp.notna().mean() < 0.8
    assert (perf.lcp > 0).all() and (perf.fcp <= perf.lcp).all() and (perf.cls >= 0).all()
    assert (perf.event_name == "web-vitals").all()
    mobile = perf[perf.device_type == "Mobile"].lcp.median()
    desktop = perf[perf.device_type == "Desktop"].lcp.median()
    assert mobile > 1.2 * desktop


def test_seed012_every_event_is_a_valid_tracker_payload(events: pd.DataFrame) -> None:
    """What ingestion would accept from the browser tracker: props per type, lengths, numbers."""
    sample = events.drop_duplicates(["type", "event_name", "props"])
    assert len(sample) > 40
    for row in sample.itertuples():
        body = {
            "site_id": str(row.site_id),
            "type": row.type,
            "hostname": row.hostname,
            "pathname": row.pathname,
            "querystring": row.querystring,
            "screenWidth": int(row.screen_width),
            "screenHeight": int(row.screen_height),
            "language": row.language,
            "page_title": row.page_title,
            "referrer": row.referrer,
            "event_name": row.event_name,
        }
        if row.props != "{}":
            body["properties"] = row.props
        for key in ("lcp", "cls", "inp", "fcp", "ttfb"):
            value = getattr(row, key)
            if not np.isnan(value):
                body[key] = value
        parse_event(body)  # raises InvalidRequestError when ingestion would refuse it


def test_seed013_devices_places_and_identified_users(events: pd.DataFrame) -> None:
    per_device = events.groupby("device_type").screen_width
    assert per_device.max()["Mobile"] < 500
    assert per_device.min()["Desktop"] >= 1280
    assert 700 <= per_device.min()["Tablet"] and per_device.max()["Tablet"] <= 1100
    pairs = set(zip(events.browser, events.operating_system, strict=True))
    assert ("Mobile Safari", "iOS") in pairs and ("Chrome", "Windows") in pairs
    assert not {("Safari", "Windows"), ("Mobile Safari", "Android")} & pairs
    assert events.browser_version.str.fullmatch(r"\d+").all()
    assert events.country.nunique() > 10
    regions = events[events.region != ""]
    assert (regions.region.str[:2] == regions.country).all()
    per_user = events.groupby("user_id")
    for column in ("browser", "operating_system", "country", "language", "identified_user_id"):
        assert (per_user[column].nunique() == 1).all(), column
    assert events.user_id.str.fullmatch(r"[0-9a-f]{16}").all()
    assert events.session_id.str.fullmatch(r"[0-9a-f]{16}").all()
    identified = events[events.identified_user_id != ""]
    assert 0.01 < identified.user_id.nunique() / events.user_id.nunique() < 0.15
    assert identified.identified_user_id.str.fullmatch(r"usr_[0-9a-f]{10}").all()


def test_seed014_type_specific_props(events: pd.DataFrame) -> None:
    expected = {
        "outbound": {"url", "text"},
        "button_click": {"text"},
        "copy": {"sourceElement", "text", "textLength"},
        "form_submit": {"formId", "formName", "formAction", "method", "fieldCount"},
        "input_change": {"element", "inputName"},
    }
    for kind, keys in expected.items():
        props = events[events.type == kind].props.map(json.loads)
        assert props.map(lambda p, keys=keys: set(p) == keys).all(), kind
    forms = events[events.type == "form_submit"]
    form_ids = forms.props.map(lambda p: json.loads(p)["formId"])
    assert set(forms.pathname[form_ids == "signup-form"]) == {"/signup"}
    assert set(forms.pathname[form_ids == "checkout-form"]) == {"/checkout"}
    # The newsletter form sits in the footer of every page.
    assert forms.pathname[form_ids == "newsletter-form"].nunique() > 10
    customs = set(events[events.type == "custom_event"].event_name)
    assert {"signup", "purchase", "newsletter_subscribe", "video_play"} <= customs


def test_seed015_same_seed_same_rows() -> None:
    def run(seed: int) -> pa.Table:
        return pa.concat_tables(list(generate_events(3, 20_000, 14, seed, now=NOW, chunk_rows=4_000)))

    first, again, other = run(99), run(99), run(100)
    assert first.equals(again)
    assert not first.column("session_id").equals(other.column("session_id"))


def test_seed016_bad_arguments() -> None:
    with pytest.raises(ValueError):
        list(generate_events(1, -1, 30, 1))
    with pytest.raises(ValueError):
        list(generate_events(1, 10, 0, 1))
    with pytest.raises(ValueError):
        list(generate_events(1, 10, 30, 1, error_messages=0))
    assert list(generate_events(1, 0, 30, 1)) == []


def test_seed017_write_events_commits_through_the_batch_writer(tmp_path) -> None:
    store = DuckDBEventStore(tmp_path / "events.duckdb")
    writer = BatchWriter(store)
    committed: list[int] = []
    try:
        inserted = write_events(writer, 4, 250_000, days=30, seed=1, now=NOW, progress=committed.append)
    finally:
        writer.close()
    # One table of whole sessions, committed at once (a chunk holds up to a million rows), never event by event.
    assert committed == [250_000] and inserted == 250_000
    assert store.count(4) == 250_000
    assert store.query("SELECT count(DISTINCT type) FROM events")[0][0] == 9
    store.close()


def test_seed018_rows_do_not_depend_on_how_the_work_is_sliced(monkeypatch: pytest.MonkeyPatch) -> None:
    """The element-wise steps run in slices on several threads; any slicing gives the rows of one whole pass."""

    def run() -> pa.Table:
        return pa.concat_tables(list(generate_events(3, 30_000, 14, 5, now=NOW, chunk_rows=10_000)))

    monkeypatch.setattr(seed, "_SLICE", 1 << 40)  # one slice: the whole range in one call
    whole = run()
    monkeypatch.setattr(seed, "_SLICE", 997)
    monkeypatch.setattr(seed, "_THREADS", 3)
    assert run().equals(whole)
    monkeypatch.setattr(seed, "_THREADS", 1)
    assert run().equals(whole)


def test_seed019_hex_strings_are_the_drawn_bytes_in_hex(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(seed, "_SLICE", 1_000)
    for k, nbytes, prefix in ((4_321, 5, b"usr_"), (3, 2, b""), (2_000, 8, b"")):
        drawn = np.random.default_rng(8).integers(0, 256, size=(k, nbytes), dtype=np.uint8)
        strings = seed._hex_strings(np.random.default_rng(8), k, nbytes, prefix=prefix)
        assert strings.to_pylist() == [prefix.decode() + row.tobytes().hex() for row in drawn]


def test_seed020_large_chunks_hold_whole_row_groups_of_sessions() -> None:
    """Each chunk's sessions fill whole DuckDB row groups, so no checkpoint merges a partial one with full ones."""
    length = np.random.default_rng(2).integers(1, 8, 600_000)  # 4 events per session on average
    ends = np.cumsum(length)
    edges = seed._chunk_edges(length, 1_000_000)
    step = 2 * seed.ROW_GROUP_ROWS  # a million events hold about 250,000 sessions: the nearest whole is two groups
    assert edges.tolist() == [0, step, 2 * step, 600_000]
    # Chunks under half a row group of sessions are cut by events: each ends with the session reaching a multiple.
    edges = seed._chunk_edges(length, 200_000)
    assert edges[0] == 0 and edges[-1] == 600_000
    for k, cut in enumerate(edges[1:-1], start=1):
        assert ends[cut - 1] >= k * 200_000 > ends[cut - 2]


def test_seed021_row_group_rows_is_duckdbs_row_group(tmp_path) -> None:
    con = duckdb.connect(str(tmp_path / "groups.duckdb"))
    con.register("incoming", pa.table({"x": np.arange(2 * seed.ROW_GROUP_ROWS + 5)}))
    con.execute("CREATE TABLE t (x BIGINT)")
    con.execute("INSERT INTO t SELECT * FROM incoming")  # one insert, as a chunk's sessions are
    counts = con.execute(
        "SELECT row_group_id, sum(count) FROM pragma_storage_info('t') WHERE segment_type <> 'VALIDITY' "
        "GROUP BY row_group_id ORDER BY row_group_id"
    ).fetchall()
    assert [count for _, count in counts] == [seed.ROW_GROUP_ROWS, seed.ROW_GROUP_ROWS, 5]
    con.close()
