"""Realistic events with known truth, and pandas computations of what every read endpoint should say.

``generate_events`` builds seeded sessions (several events each, channels including direct '', UTMs,
countries, browsers, devices, custom events with properties, errors with stacks) spanning the
Europe/Paris spring-forward change (2026-03-29). The ``expected_*`` helpers recompute the numbers with
pandas from the raw rows, independently of the SQL builders, following the documented definitions.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

import pandas as pd

__all__ = [
    "DST_START",
    "generate_events",
    "frame",
    "window_rows",
    "sessions_of",
    "qualify",
    "expected_overview",
    "expected_metric",
    "expected_goal",
    "expected_error_names",
    "expected_usage",
    "expected_funnel",
    "local_buckets",
    "path_matches",
]

PARIS = ZoneInfo("Europe/Paris")
DST_START = datetime(2026, 3, 26)  # first generated day (UTC); the change is 2026-03-29 01:00 UTC
DAYS = 7
PATHS = ["/", "/pricing", "/blog/a", "/blog/b", "/blog/b/c", "/docs/", "/docs/x/y", "/signup", "/welcome"]
CHANNELS = [
    ("", "", {}),
    ("Organic Search", "https://www.google.com/search?q=sitelens", {}),
    ("Organic Social", "https://t.co/abc", {}),
    ("Referral", "https://news.example.org/post/1", {}),
    ("Email", "", {"utm_source": "newsletter", "utm_medium": "email", "utm_campaign": "spring"}),
    ("Paid Search", "https://www.bing.com/", {"utm_source": "bing", "utm_medium": "cpc", "utm_campaign": "brand"}),
]
COUNTRIES = ["FR", "US", "DE", "GB", "JP"]
BROWSERS = [("Chrome", "124", "Windows", "10"), ("Firefox", "125", "Linux", ""), ("Safari", "17", "iOS", "17.4")]
DEVICES = ["Desktop", "Mobile", "Tablet"]
ERRORS = [
    ("TypeError", "x is undefined", "TypeError: x is undefined\n    at f (https://example.com/app.js:10:5)"),
    ("ReferenceError", "foo is not defined", "ReferenceError: foo is not defined\n    at g (app.js:3:1)"),
    ("Error", "Network failed", ""),
]


def generate_events(site_id: int, *, sessions: int = 260, seed: int = 7) -> list[dict[str, Any]]:
    """Seeded sessions over 7 days from 2026-03-26 (UTC); timestamps strictly increase within a session."""
    rnd = random.Random(seed)
    visitors = [f"{rnd.getrandbits(48):012x}" for _ in range(160)]
    identified = {v: f"user-{i}" for i, v in enumerate(visitors) if i % 9 == 0}
    profile = {
        v: (rnd.choice(COUNTRIES), rnd.choice(BROWSERS), rnd.choice(DEVICES), rnd.choice(["en-US", "fr-FR", "de"]))
        for v in visitors
    }
    rows: list[dict[str, Any]] = []
    for n in range(sessions):
        visitor = rnd.choice(visitors)
        country, (browser, bver, os_, osver), device, language = profile[visitor]
        session_id = f"sess{n:05d}"
        start = DST_START + timedelta(seconds=rnd.randrange(DAYS * 86400), milliseconds=rnd.randrange(1000))
        channel, referrer, utm = rnd.choice(CHANNELS)
        late_channel = rnd.random() < 0.1 and channel == ""
        count = rnd.choice([1, 1, 2, 3, 4, 5, 6, 8])
        t = start
        for k in range(count):
            if k == 0:
                kind = "pageview" if rnd.random() < 0.9 else "custom_event"
            else:
                kind = rnd.choices(
                    ["pageview", "custom_event", "error", "outbound", "performance", "button_click"],
                    weights=[50, 20, 10, 6, 8, 6],
                )[0]
            row: dict[str, Any] = {
                "site_id": site_id,
                "timestamp": t,
                "session_id": session_id,
                "user_id": visitor,
                "identified_user_id": identified.get(visitor, "") if k > 0 or rnd.random() < 0.5 else "",
                "hostname": "example.com",
                "pathname": rnd.choice(PATHS),
                "page_title": "",
                "type": kind,
                "country": country,
                "browser": browser,
                "browser_version": bver,
                "operating_system": os_,
                "operating_system_version": osver,
                "device_type": device,
                "language": language,
                "screen_width": 1280 if device == "Desktop" else 390,
                "screen_height": 800 if device == "Desktop" else 844,
                "channel": channel if k == 0 else "",
                "referrer": referrer if k == 0 else "",
            }
            row["page_title"] = "Title " + row["pathname"]
            if k == 0:
                row.update(utm)
            if late_channel and k == 1:
                row["channel"], row["referrer"] = "Referral", "https://forum.example.net/t/9"
            if kind == "custom_event":
                name = rnd.choice(["signup", "signup", "download", "play"])
                props = {
                    "plan": rnd.choice(["pro", "free"]),
                    "seats": rnd.choice([1, 3, 5, 10]),
                    "trial": rnd.random() < 0.5,
                }
                row.update(event_name=name, props=json.dumps(props))
            elif kind == "error":
                cls, message, stack = rnd.choice(ERRORS)
                props = {"message": message, "stack": stack}
                if stack:
                    props.update(fileName="https://example.com/app.js", lineNumber=10, columnNumber=5)
                else:
                    props.update(lineno=7, colno=2)
                row.update(event_name=cls, props=json.dumps(props))
            elif kind == "outbound":
                row["props"] = json.dumps({"url": rnd.choice(["https://github.com/x", "https://docs.example.org/a"])})
            elif kind == "button_click":
                row["props"] = json.dumps({"text": rnd.choice(["Buy now", "Subscribe"])})
            elif kind == "performance":
                row.update(event_name="web-vitals", lcp=1200.0, ttfb=80.0)
            rows.append(row)
            t = t + timedelta(seconds=rnd.randrange(5, 600), milliseconds=rnd.randrange(1, 1000))
    return rows


def frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """All rows as a DataFrame with every column filled (strings never missing)."""
    df = pd.DataFrame(list(rows))
    for col in (
        "identified_user_id",
        "utm_source",
        "utm_medium",
        "utm_campaign",
        "utm_term",
        "utm_content",
        "event_name",
        "region",
        "city",
        "querystring",
    ):
        if col not in df:
            df[col] = ""
        df[col] = df[col].fillna("").astype(object)
    df["props"] = df.get("props", pd.Series(["{}"] * len(df))).fillna("{}")
    df["timestamp"] = pd.to_datetime(df["timestamp"])
    return df.sort_values(["session_id", "timestamp"]).reset_index(drop=True)


def window_rows(df: pd.DataFrame, start: datetime | None, end: datetime | None, include_end: bool = False):
    """Rows with ``start <= timestamp < end`` (``<= end`` when ``include_end``)."""
    mask = pd.Series(True, index=df.index)
    if start is not None:
        mask &= df["timestamp"] >= pd.Timestamp(start)
    if end is not None:
        mask &= (df["timestamp"] <= pd.Timestamp(end)) if include_end else (df["timestamp"] < pd.Timestamp(end))
    return df[mask]


def _prop(props: str, key: str) -> Any:
    try:
        return json.loads(props).get(key)
    except (ValueError, AttributeError):
        return None


def _referrer_domain(url: str) -> str:
    if not url:
        return ""
    host = (urlsplit(url).hostname or "").lower()
    return host[4:] if host.startswith("www.") else host


def _first_nonempty(values: Iterable[str]) -> str:
    return next((v for v in values if v), "")


def sessions_of(df: pd.DataFrame) -> pd.DataFrame:
    """One row per session with the per-session values the API documents."""
    out = []
    for sid, g in df.sort_values("timestamp").groupby("session_id", sort=False):
        pv = g[g["type"] == "pageview"]
        non_direct = [c for c in g["channel"] if c not in ("", "Direct", "Internal")]
        ident = [v for v in g["identified_user_id"] if v]
        out.append(
            {
                "session_id": sid,
                "start": g["timestamp"].min(),
                "end": g["timestamp"].max(),
                "pageviews": len(pv),
                "user": ident[-1] if ident else g["user_id"].iloc[-1],
                "channel": non_direct[0] if non_direct else g["channel"].iloc[0],
                "entry_page": pv["pathname"].iloc[0] if len(pv) else "",
                "exit_page": pv["pathname"].iloc[-1] if len(pv) else "",
                "country": _first_nonempty(g["country"]),
                "browser": _first_nonempty(g["browser"]),
                "device_type": _first_nonempty(g["device_type"]),
                "utm_campaign": _first_nonempty(g["utm_campaign"]),
                "utm_source": _first_nonempty(g["utm_source"]),
                "referrer": _first_nonempty(_referrer_domain(r) for r in g["referrer"]),
            }
        )
    return pd.DataFrame(out).set_index("session_id") if out else pd.DataFrame()


def _text(value: Any) -> str:
    return "" if value is None else (str(value).lower() if isinstance(value, bool) else str(value))


def _match(value: Any, ftype: str, values: list[Any]) -> bool:
    text = _text(value)
    values = [_text(v) if isinstance(v, bool) else v for v in values]
    if ftype == "equals":
        return text in [str(v) for v in values]
    if ftype == "not_equals":
        return text not in [str(v) for v in values]
    if ftype == "contains":
        return any(str(v) in text for v in values)
    if ftype == "not_contains":
        return all(str(v) not in text for v in values)
    if ftype == "starts_with":
        return any(text.startswith(str(v)) for v in values)
    if ftype == "regex":
        return any(re.search(str(v), text) for v in values)
    if ftype == "is_null":
        return text == ""
    if ftype == "is_not_null":
        return text != ""
    try:
        number = float(text)
    except ValueError:
        return False
    ops = {"greater_than": number.__gt__, "less_than": number.__lt__}
    return any(ops[ftype](float(v)) for v in values)


_NEGATIVE = {"not_equals": "equals", "not_contains": "contains", "is_null": "is_not_null"}


def qualify(df: pd.DataFrame, filters: Sequence[dict[str, Any]]) -> set[str]:
    """Session ids (of the in-window rows ``df``) that satisfy every filter."""
    sessions = sessions_of(df)
    keep = set(sessions.index)
    for f in filters:
        param, ftype, values = f["parameter"], f["type"], f.get("value", [])
        if param == "channel":
            values = ["" if v == "Direct" else v for v in values]
        if param in ("pathname", "event_name") or param.startswith("prop:"):
            hits: set[str] = set()
            positive = _NEGATIVE.get(ftype, ftype)
            for _, row in df.iterrows():
                if param.startswith("prop:"):
                    if row["type"] != "custom_event":
                        continue
                    value = _prop(row["props"], param[5:])
                else:
                    value = row[param]
                if _match(value, positive, values):
                    hits.add(row["session_id"])
            chosen = (set(sessions.index) - hits) if ftype in _NEGATIVE else hits
        else:
            chosen = {sid for sid, value in sessions[param].items() if _match(value, ftype, values)}
        keep &= chosen
    return keep


def expected_overview(df: pd.DataFrame) -> dict[str, Any]:
    """Overview numbers of the in-window rows ``df`` (already restricted to qualifying sessions)."""
    s = sessions_of(df)
    if s.empty:
        return {
            "sessions": 0,
            "pageviews": 0,
            "users": 0,
            "pages_per_session": None,
            "bounce_rate": None,
            "session_duration": None,
        }
    durations = (s["end"] - s["start"]).dt.total_seconds()
    return {
        "sessions": len(s),
        "pageviews": int((df["type"] == "pageview").sum()),
        "users": s["user"].nunique(),
        "pages_per_session": s["pageviews"].mean(),
        "bounce_rate": (s["pageviews"] == 1).mean() * 100,
        "session_duration": durations.mean(),
    }


def expected_metric(df: pd.DataFrame, parameter: str) -> list[tuple[str, int]]:
    """``(value, sessions)`` sorted by count desc then value (channel keeps '')."""
    if parameter in ("pathname", "page_title"):
        pairs = df[(df["type"] == "pageview") & (df[parameter] != "")][["session_id", parameter]].drop_duplicates()
        counts = pairs.groupby(parameter).size()
    else:
        s = sessions_of(df)
        values = s[parameter]
        if parameter != "channel":
            values = values[values != ""]
        counts = values.value_counts()
    items = [(str(v), int(c)) for v, c in counts.items()]
    return sorted(items, key=lambda x: (-x[1], x[0]))


def path_matches(pattern: str, path: str) -> bool:
    """The documented path pattern rule, written independently: '*' one or more non-'/' chars, '**' anything."""
    tokens = re.split(r"(\*\*|\*)", pattern)
    regex = "".join(".*" if t == "**" else "[^/]+" if t == "*" else re.escape(t) for t in tokens)
    return re.fullmatch(regex, path) is not None


def _goal_hit(row: pd.Series, goal: dict[str, Any]) -> bool:
    config = goal["config"]
    if goal["goalType"] == "path":
        return row["type"] == "pageview" and path_matches(config["pathPattern"], row["pathname"])
    if goal["goalType"] == "event":
        if row["type"] != "custom_event" or row["event_name"] != config["eventName"]:
            return False
        if "eventPropertyKey" in config:
            actual = _prop(row["props"], config["eventPropertyKey"])
            wanted = config["eventPropertyValue"]
            if isinstance(wanted, bool):
                return actual is wanted
            if isinstance(wanted, int | float):
                return isinstance(actual, int | float) and not isinstance(actual, bool) and float(actual) == wanted
            return str(actual) == wanted
        return True
    raise ValueError(goal["goalType"])


def expected_goal(df: pd.DataFrame, goal: dict[str, Any]) -> tuple[int, int, set[str]]:
    """``(total_sessions, total_conversions, converted session ids)`` over the rows ``df``."""
    converted = {row["session_id"] for _, row in df.iterrows() if _goal_hit(row, goal)}
    return df["session_id"].nunique(), len(converted), converted


def expected_error_names(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Error message rows sorted by count desc then message; percentage of all occurrences."""
    errors = df[(df["type"] == "error") & (df["event_name"] != "")].copy()
    errors["message"] = [_prop(p, "message") or "" for p in errors["props"]]
    errors = errors[errors["message"] != ""]
    total = len(errors)
    rows = []
    for message, g in errors.groupby("message"):
        rows.append(
            {
                "value": message,
                "count": len(g),
                "sessionCount": g["session_id"].nunique(),
                "percentage": len(g) * 100 / total,
            }
        )
    return sorted(rows, key=lambda r: (-r["count"], r["value"]))


def local_buckets(timestamps: Iterable[pd.Timestamp], zone: str, bucket: str) -> dict[str, int]:
    """Count per bucket: floor of the wall-clock time in ``zone``, reported as the ISO UTC instant of the start."""
    tz = ZoneInfo(zone)
    counts: dict[str, int] = {}
    for ts in timestamps:
        local = ts.to_pydatetime().replace(tzinfo=UTC).astimezone(tz).replace(tzinfo=None)
        if bucket == "hour":
            start = local.replace(minute=0, second=0, microsecond=0)
        elif bucket == "day":
            start = local.replace(hour=0, minute=0, second=0, microsecond=0)
        else:
            raise ValueError(bucket)
        iso = start.replace(tzinfo=tz).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        counts[iso] = counts.get(iso, 0) + 1
    return counts


def expected_usage(df: pd.DataFrame, zone: str) -> dict[str, dict[str, int]]:
    """Per local date: count of each event type and the total."""
    tz = ZoneInfo(zone)
    out: dict[str, dict[str, int]] = {}
    for ts, kind in zip(df["timestamp"], df["type"], strict=True):
        day = ts.to_pydatetime().replace(tzinfo=UTC).astimezone(tz).date().isoformat()
        counts = out.setdefault(day, {"event_count": 0})
        counts[f"{kind}_count"] = counts.get(f"{kind}_count", 0) + 1
        counts["event_count"] += 1
    return out


def expected_funnel(df: pd.DataFrame, steps: Sequence[dict[str, Any]]) -> list[int]:
    """Sessions reaching each step, each matching event strictly later than the previous step's."""

    def hit(row: pd.Series, step: dict[str, Any]) -> bool:
        if step.get("hostname") and row["hostname"] != step["hostname"]:
            return False
        if step["type"] == "page":
            return row["type"] == "pageview" and path_matches(step["value"], row["pathname"])
        if row["type"] != "custom_event" or row["event_name"] != step["value"]:
            return False
        if "eventPropertyKey" in step:
            return _text(_prop(row["props"], step["eventPropertyKey"])) == _text(step["eventPropertyValue"])
        return True

    reached = [0] * len(steps)
    for _, g in df.sort_values("timestamp").groupby("session_id"):
        last_time = None
        for i, step in enumerate(steps):
            times = [
                r["timestamp"]
                for _, r in g.iterrows()
                if hit(r, step) and (last_time is None or r["timestamp"] > last_time)
            ]
            if not times:
                break
            last_time = min(times)
            reached[i] += 1
    return reached


def is_close(a: float | None, b: float | None) -> bool:
    """Float equality for computed averages (None only equals None)."""
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)
