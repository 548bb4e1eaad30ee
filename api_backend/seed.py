"""Synthetic traffic for demos, tests and benchmarks, generated column-wise with numpy (no Python loop per event).

``generate_events(site_id, n, days, seed)`` yields Arrow tables of ``EVENT_SCHEMA`` holding exactly ``n`` events
that look like a small SaaS site's traffic:

- sessions start over ``days`` days ending at ``now`` with a daily and weekly rhythm, a slow upward trend and
  day-to-day noise; inside a session events follow each other within seconds to minutes;
- visitors return: a pool of regulars has many sessions, most visitors come once; two sessions of one visitor
  are always at least 30 minutes apart, so re-sessionising the events gives back the same sessions;
- each session arrives through a channel (referrer and landing-page UTM keys on its first event only, the
  channel value the ingestion classifier would store, ``""`` for direct), lands on a page that depends on the
  channel (search lands on blog and docs, ads on pricing) and walks the site map with a Markov chain;
- all nine event types, with the props the browser tracker sends; a handful of recurring JavaScript errors
  with multi-line stacks; web vitals on performance events (slower on mobile);
- conversions with a propensity that differs by channel: signup, purchase (plan, amount) and newsletter
  sessions end with the pages, form submissions and custom events of that conversion.

The same ``seed`` and ``now`` give the same rows. Everything is drawn from the tables in ``seed_catalog``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from api_backend import seed_catalog as catalog
from api_backend.store.events import EVENT_COLUMNS, EVENT_SCHEMA, EVENT_TYPES

__all__ = ["SESSION_GAP_MS", "generate_events", "write_events"]

SESSION_GAP_MS = 30 * 60 * 1000
_DAY_MS = 86_400_000
_HOUR_MS = 3_600_000
_FAR_PAST = -(10**15)

# Relative traffic by UTC hour (Europe and the Americas overlap in the afternoon) and by weekday (Monday first).
_HOUR_WEIGHTS = np.array(
    [0.35, 0.3, 0.28, 0.27, 0.28, 0.33, 0.45, 0.6, 0.75, 0.85, 0.92, 0.98]
    + [1.0, 1.0, 1.0, 0.98, 0.95, 0.9, 0.85, 0.8, 0.72, 0.62, 0.52, 0.42]
)
_WEEKDAY_WEIGHTS = np.array([1.0, 1.05, 1.05, 1.0, 0.92, 0.6, 0.55])

# Type of every event after a session's first (which is always a pageview).
_TYPE_WEIGHTS = {
    "pageview": 58,
    "performance": 12,
    "button_click": 8,
    "custom_event": 6,
    "input_change": 5,
    "outbound": 4,
    "copy": 3,
    "form_submit": 2,
    "error": 2,
}
_T = {name: code for code, name in enumerate(EVENT_TYPES)}

_MAX_SESSION_EVENTS = 80
# Rows per table handed to the writer, and how many tables may wait for their commit: enough to keep the
# writer thread busy while the next chunk is generated, few enough to bound memory. A commit of a million rows
# costs DuckDB less than half as much per event as ten of 100,000 (``bench/analysis.md``): an insert of at least a row
# group (122,880 rows) is compressed straight into the file, a smaller one goes through the write-ahead log and is
# rewritten at the checkpoint, and the sessions fold of a larger batch runs on every thread.
CHUNK_ROWS = 1_000_000
_IN_FLIGHT = 2
# DuckDB's row group. Each chunk's sessions are new to the store, and an insert leaves its last row group partly
# filled. A checkpoint merges a run of row groups that fits in fewer (DuckDB's vacuum), so a tail of a few thousand
# sessions after two full groups had the next checkpoint rewrite all three, list columns and all: 1-2 s per million
# events. Chunks holding a whole number of row groups of sessions leave no tail (``_chunk_edges``).
ROW_GROUP_ROWS = 122_880
_RETURNING_SHARE = 0.42  # sessions by a visitor from the pool of regulars
_REGULARS_PER_SESSION = 0.12
_IDENTIFIED_SHARE = 0.06
_VERSION_SHARES = (0.55, 0.3, 0.1, 0.05)  # newest browser / OS version first


def _cum(weights) -> np.ndarray:
    w = np.asarray(weights, dtype=float)
    cum = np.cumsum(w) / w.sum()
    cum[-1] = 1.0
    return cum


def _cum_rows(rows: list[list[float]]) -> np.ndarray:
    """Cumulative distributions of unequal length, padded with 2.0 (never reached by a uniform draw)."""
    width = max(len(r) for r in rows)
    out = np.full((len(rows), width), 2.0)
    for i, r in enumerate(rows):
        out[i, : len(r)] = _cum(r)
    return out


def _pick(rng: np.random.Generator, cum: np.ndarray, k: int) -> np.ndarray:
    return np.searchsorted(cum, rng.random(k), side="right")


def _pick_rows(rng: np.random.Generator, cum_rows: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """One draw per entry of ``rows`` from that row's distribution."""
    u = rng.random(len(rows))
    return (u[:, None] >= cum_rows[rows]).sum(axis=1)


# Elements per slice of an element-wise computation spread over threads (``_by_slices``).
_SLICE = 1 << 20
_THREADS = min(4, os.cpu_count() or 1)
_R = TypeVar("_R")


def _by_slices(compute: Callable[[slice], _R], size: int) -> list[_R]:
    """``compute`` of consecutive slices covering ``range(size)``, in order, run on up to ``_THREADS`` threads.

    For element-wise numpy work, which lets the GIL go: each element's result is the same as in one call over the
    whole range, and the slices' temporaries stay small.
    """
    slices = [slice(i, min(i + _SLICE, size)) for i in range(0, size, _SLICE)]
    if len(slices) < 2 or _THREADS < 2:
        return [compute(part) for part in slices]
    with ThreadPoolExecutor(_THREADS) as pool:
        return list(pool.map(compute, slices))


class _Strings:
    """Interns strings to indices; ``array()`` is the Arrow dictionary that ``take`` expands."""

    def __init__(self, *initial: str) -> None:
        self._index: dict[str, int] = {}
        for s in initial:
            self.add(s)

    def add(self, value: str) -> int:
        if value not in self._index:
            self._index[value] = len(self._index)
        return self._index[value]

    def array(self) -> pa.Array:
        return pa.array(list(self._index), type=pa.string())


# The two lower-case hex digits of each byte value, as the two bytes of a little-endian uint16.
_HEX_PAIRS = np.array([ord(f"{b:02x}"[0]) | ord(f"{b:02x}"[1]) << 8 for b in range(256)], dtype="<u2")


def _hex_strings(rng: np.random.Generator, k: int, nbytes: int, prefix: bytes = b"") -> pa.Array:
    """``k`` random lower-case hex strings of ``2 * nbytes`` digits after ``prefix``, built as Arrow buffers."""
    raw = rng.integers(0, 256, size=(k, nbytes), dtype=np.uint8)
    width = len(prefix) + 2 * nbytes
    chars = np.empty((k, width), dtype=np.uint8)
    if prefix:
        chars[:, : len(prefix)] = np.frombuffer(prefix, dtype=np.uint8)

    def fill(rows: slice) -> None:
        chars[rows, len(prefix) :] = _HEX_PAIRS[raw[rows]].view(np.uint8)

    _by_slices(fill, k)
    offsets = np.arange(0, (k + 1) * width, width, dtype=np.int32)
    return pa.StringArray.from_buffers(k, pa.py_buffer(offsets), pa.py_buffer(chars))


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


class _Catalog:
    """The catalogue turned into index arrays and cumulative distributions for one domain."""

    def __init__(self, domain: str, error_messages: int) -> None:
        labels = domain.split(".")
        self.brand = (labels[-2] if len(labels) >= 2 else labels[0]).capitalize()
        self.hostnames = pa.array([domain, f"www.{domain}"], type=pa.string())
        cats = {name: i for i, name in enumerate(catalog.CATEGORIES)}
        n_cats = len(cats)

        # Site map.
        pages = catalog.site_map(self.brand)
        self.paths = pa.array([p[0] for p in pages], type=pa.string())
        self.titles = pa.array([p[1] for p in pages], type=pa.string())
        self.path_cat = np.array([cats[p[2]] for p in pages])
        self.path_index = {p[0]: i for i, p in enumerate(pages)}
        per_cat: list[list[int]] = [[] for _ in range(n_cats)]
        for i, page in enumerate(pages):
            per_cat[cats[page[2]]].append(i)
        self.cat_path_cum = _cum_rows([[pages[i][3] for i in members] for members in per_cat])
        self.cat_path_table = np.zeros(self.cat_path_cum.shape, dtype=np.int64)
        for c, members in enumerate(per_cat):
            self.cat_path_table[c, : len(members)] = members

        # Arrivals and channel behaviour.
        arrivals = catalog.ARRIVALS
        channel_names = list(catalog.CHANNEL_BEHAVIOUR)
        channel_of = {name: i for i, name in enumerate(channel_names)}
        self.channel_names = channel_names
        self.arrival_cum = _cum([a.weight for a in arrivals])
        self.arrival_channel = np.array([channel_of[a.channel] for a in arrivals])
        # Index 0 is what every later event of a session carries; arrival i is at i + 1.
        utm_keys = ("utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content")
        self.arrival_columns = {
            "referrer": pa.array([""] + [a.referrer for a in arrivals]),
            "channel": pa.array([""] + [a.channel for a in arrivals]),
            "querystring": pa.array([""] + [a.querystring for a in arrivals]),
            "url_parameters": pa.array(["{}"] + [a.url_parameters for a in arrivals]),
            **{key: pa.array([""] + [getattr(a, key) for a in arrivals]) for key in utm_keys},
        }
        behaviour = [catalog.CHANNEL_BEHAVIOUR[name] for name in channel_names]
        self.bounce = np.array([b.bounce for b in behaviour])
        self.signup = np.array([b.signup for b in behaviour])
        self.purchase = np.array([b.purchase_given_signup for b in behaviour])
        self.newsletter = np.array([b.newsletter for b in behaviour])
        self.entry_cum = _cum_rows(
            [[catalog.ENTRY_WEIGHTS[name].get(c, 0.0) for c in catalog.CATEGORIES] for name in channel_names]
        )
        self.transition_cum = _cum_rows(
            [[catalog.TRANSITIONS[src].get(dst, 0.0) for dst in catalog.CATEGORIES] for src in catalog.CATEGORIES]
        )

        # Devices and places.
        self.browsers, self.browser_versions = _Strings(), _Strings("")
        self.systems, self.system_versions, self.device_types = _Strings(), _Strings(""), _Strings()
        devices = catalog.DEVICES
        self.device_cum = _cum([d.weight for d in devices])
        self.device_browser = np.array([self.browsers.add(d.browser) for d in devices])
        self.device_os = np.array([self.systems.add(d.os) for d in devices])
        self.device_type = np.array([self.device_types.add(d.device_type) for d in devices])
        self.device_mobile = np.array([d.device_type != "Desktop" for d in devices])
        self.bver_table, self.bver_count = self._version_table(
            [d.browser_versions for d in devices], self.browser_versions
        )
        self.osver_table, self.osver_count = self._version_table([d.os_versions for d in devices], self.system_versions)
        width = max(len(d.screens) for d in devices)
        self.screen_w = np.zeros((len(devices), width), dtype=np.int32)
        self.screen_h = np.zeros((len(devices), width), dtype=np.int32)
        self.screen_count = np.array([len(d.screens) for d in devices])
        for i, d in enumerate(devices):
            for j, (w, h) in enumerate(d.screens):
                self.screen_w[i, j], self.screen_h[i, j] = w, h
        places = catalog.PLACES
        self.place_cum = _cum([p.weight for p in places])
        self.countries = pa.array([p.country for p in places])
        self.regions = pa.array([p.region for p in places])
        self.cities = pa.array([p.city for p in places])
        self.languages = _Strings()
        self.place_language = np.array([self.languages.add(p.language) for p in places])
        self.place_is_us = np.array([p.country == "US" for p in places])
        self.english = self.languages.add("en-US")

        # Event names and props.
        self.names, self.props = _Strings(""), _Strings("{}")
        self.web_vitals = self.names.add("web-vitals")
        errors = catalog.error_props(error_messages, domain)
        self.error_cum = _cum([1.0 / (i + 1) ** 1.1 for i in range(error_messages)])
        self.error_name = np.array([self.names.add(name) for name, _ in errors])
        self.error_props = np.array([self.props.add(props) for _, props in errors])
        self.outbound_cum = _cum([w for _, _, w in catalog.OUTBOUND_LINKS])
        self.outbound_props = np.array(
            [self.props.add(_json({"url": url, "text": text})) for url, text, _ in catalog.OUTBOUND_LINKS]
        )
        self.button_cum = _cum([w for _, w in catalog.BUTTONS])
        self.button_props = np.array([self.props.add(_json({"text": text})) for text, _ in catalog.BUTTONS])
        self.copy_cum = _cum([w for _, w in catalog.COPIES])
        self.copy_props = np.array([self.props.add(_json(p)) for p, _ in catalog.COPIES])
        self.form_props = {form_id: self.props.add(_json(fields)) for form_id, fields in catalog.FORMS.items()}
        self.form_by_cat = np.array(
            [self.form_props[catalog.FORM_BY_CATEGORY.get(c, "newsletter-form")] for c in catalog.CATEGORIES]
        )
        inputs = [catalog.INPUTS.get(c, catalog.INPUTS[""]) for c in catalog.CATEGORIES]
        self.input_count = np.array([len(i) for i in inputs])
        self.input_table = np.zeros((n_cats, max(self.input_count)), dtype=np.int64)
        for c, options in enumerate(inputs):
            for j, (element, name) in enumerate(options):
                self.input_table[c, j] = self.props.add(_json({"element": element, "inputName": name}))
        self.custom_cum = _cum([w for _, _, w in catalog.CUSTOM_EVENTS])
        self.custom_name = np.array([self.names.add(name) for name, _, _ in catalog.CUSTOM_EVENTS])
        self.custom_props = np.array([self.props.add(_json(p)) for _, p, _ in catalog.CUSTOM_EVENTS])
        self.variants = {
            kind: (
                self.names.add(kind),
                _cum([w for _, w in options]),
                np.array([self.props.add(_json(p)) for p, _ in options]),
            )
            for kind, options in (
                ("signup", catalog.SIGNUPS),
                ("purchase", catalog.PURCHASES),
                ("newsletter_subscribe", catalog.NEWSLETTERS),
            )
        }
        self.type_cum = _cum(list(_TYPE_WEIGHTS.values()))
        self.type_codes = np.array([_T[name] for name in _TYPE_WEIGHTS])
        self.types = pa.array(list(EVENT_TYPES), type=pa.string())

        # Conversion scripts: the last events of a converting session, as (type, fixed path, name/props kind).
        path = self.path_index
        self.scripts: dict[str, list[tuple[int, int, str | None]]] = {
            "purchase": [
                (_T["pageview"], path["/pricing"], None),
                (_T["pageview"], path["/signup"], None),
                (_T["form_submit"], -1, "form:signup-form"),
                (_T["custom_event"], -1, "signup"),
                (_T["pageview"], path["/checkout"], None),
                (_T["form_submit"], -1, "form:checkout-form"),
                (_T["custom_event"], -1, "purchase"),
                (_T["pageview"], path["/checkout/success"], None),
            ],
            "signup": [
                (_T["pageview"], path["/signup"], None),
                (_T["input_change"], -1, None),
                (_T["form_submit"], -1, "form:signup-form"),
                (_T["custom_event"], -1, "signup"),
            ],
            "newsletter": [
                (_T["form_submit"], -1, "form:newsletter-form"),
                (_T["custom_event"], -1, "newsletter_subscribe"),
            ],
        }

    @staticmethod
    def _version_table(versions: list[tuple[str, ...]], strings: _Strings) -> tuple[np.ndarray, np.ndarray]:
        width = max(len(v) for v in versions)
        table = np.zeros((len(versions), width), dtype=np.int64)
        for i, options in enumerate(versions):
            for j, value in enumerate(options):
                table[i, j] = strings.add(value)
        return table, np.array([len(v) for v in versions])


class _Visitors:
    """Per-visitor attributes (device, place, ids) and the end of each visitor's latest session."""

    def __init__(self, rng: np.random.Generator, cat: _Catalog, size: int) -> None:
        self.rng, self.cat = rng, cat
        self.size = 0
        self.fields: dict[str, np.ndarray] = {}
        self.last_end = np.empty(0, dtype=np.int64)
        self._user_ids: list[pa.Array] = []
        self._identified: list[pa.Array] = []
        self._arrays: tuple[pa.Array, pa.Array] | None = None
        self._grow(max(size, 1))
        self.next_fresh = self.size

    def _grow(self, k: int) -> None:
        rng, cat = self.rng, self.cat
        device = _pick(rng, cat.device_cum, k)
        version = np.searchsorted(_cum(_VERSION_SHARES), rng.random(k), side="right")
        os_version = np.searchsorted(_cum(_VERSION_SHARES), rng.random(k), side="right")
        screen = (rng.random(k) * cat.screen_count[device]).astype(np.int64)
        place = _pick(rng, cat.place_cum, k)
        speaks_english = (rng.random(k) < 0.15) & ~cat.place_is_us[place]
        new = {
            "device": device,
            "browser_version": cat.bver_table[device, np.minimum(version, cat.bver_count[device] - 1)],
            "os_version": cat.osver_table[device, np.minimum(os_version, cat.osver_count[device] - 1)],
            "screen_width": cat.screen_w[device, screen],
            "screen_height": cat.screen_h[device, screen],
            "place": place,
            "language": np.where(speaks_english, cat.english, cat.place_language[place]),
        }
        for key, values in new.items():
            self.fields[key] = np.concatenate([self.fields[key], values]) if key in self.fields else values
        self._user_ids.append(_hex_strings(rng, k, 8))
        identified = rng.random(k) < _IDENTIFIED_SHARE
        ids = _hex_strings(rng, k, 5, prefix=b"usr_")
        self._identified.append(pc.if_else(pa.array(identified), ids, ""))
        self.last_end = np.concatenate([self.last_end, np.full(k, _FAR_PAST, dtype=np.int64)])
        self.size += k
        self._arrays = None

    def fresh(self, k: int) -> np.ndarray:
        """``k`` visitors never seen before."""
        if self.next_fresh + k > self.size:
            self._grow(max(k, self.size // 4 + 1024))
        ids = np.arange(self.next_fresh, self.next_fresh + k)
        self.next_fresh += k
        return ids

    def id_arrays(self) -> tuple[pa.Array, pa.Array]:
        """``(user_id, identified_user_id)`` string arrays indexed by visitor."""
        if self._arrays is None:
            self._arrays = (pa.concat_arrays(self._user_ids), pa.concat_arrays(self._identified))
            self._user_ids, self._identified = [self._arrays[0]], [self._arrays[1]]
        return self._arrays


def _sample_starts(rng: np.random.Generator, count: int, days: int, now_ms: int) -> np.ndarray:
    """Session start times (ms, sorted) over ``days`` days before ``now_ms`` with daily and weekly rhythm."""
    start_ms = now_ms - days * _DAY_MS
    span = now_ms - start_ms
    first_day = start_ms // _DAY_MS
    day_factor = rng.lognormal(0.0, 0.12, now_ms // _DAY_MS - first_day + 1)
    if days >= 7:
        # One launch-like day with a traffic spike, as real sites have.
        day_factor[rng.integers(1, len(day_factor) - 1)] *= 1.8
    hours = np.append(_HOUR_WEIGHTS, _HOUR_WEIGHTS[0])
    ceiling = hours.max() * _WEEKDAY_WEIGHTS.max() * day_factor.max() * 1.15
    parts, need = [], count
    while need > 0:
        m = int(need * 2.5) + 64
        # Candidate times, then one acceptance draw each (rejection sampling against the rhythm's weight).
        when, accept = rng.random(m), rng.random(m)

        def kept(part: slice, when: np.ndarray = when, accept: np.ndarray = accept) -> np.ndarray:
            t = start_ms + (when[part] * span).astype(np.int64)
            day = t // _DAY_MS
            weight = (
                np.interp((t % _DAY_MS) / _HOUR_MS, np.arange(25), hours)
                * _WEEKDAY_WEIGHTS[(day + 3) % 7]  # 1970-01-01 was a Thursday
                * day_factor[day - first_day]
                * (0.85 + 0.3 * (t - start_ms) / span)
            )
            return t[accept[part] * ceiling < weight]

        parts.append(np.concatenate(_by_slices(kept, m))[:need])
        need -= len(parts[-1])
    return np.sort(np.concatenate(parts))


class _Plan:
    """Session-level draws for the whole run: exactly ``n`` events in time order."""

    # One entry per session, drawn by ``_draw`` (and set from its dict).
    arrival: np.ndarray
    channel: np.ndarray
    length: np.ndarray
    purchase: np.ndarray
    signup: np.ndarray
    newsletter: np.ndarray

    def __init__(self, rng: np.random.Generator, cat: _Catalog, n: int, days: int, now_ms: int) -> None:
        parts = []
        total = 0
        while total < n:
            part = self._draw(rng, cat, max(int((n - total) / 3.3), 16))
            parts.append(part)
            total += int(part["length"].sum())
        draws = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
        cum = np.cumsum(draws["length"])
        last = int(np.searchsorted(cum, n))  # first session reaching n events
        draws = {key: value[: last + 1] for key, value in draws.items()}
        draws["length"][last] -= int(cum[last]) - n
        for kind, size in (("purchase", 8), ("signup", 4), ("newsletter", 2)):
            draws[kind] &= draws["length"] > size  # a cut-short last session does not convert
        self.__dict__.update(draws)
        count = len(self.length)
        self.start = _sample_starts(rng, count, days, now_ms)
        returning = rng.random(count) < _RETURNING_SHARE
        regulars = max(1, int(count * _REGULARS_PER_SESSION))
        newcomers = np.cumsum(~returning) - 1 + regulars
        self.visitor = np.where(returning, (regulars * rng.random(count) ** 2.2).astype(np.int64), newcomers)
        self.visitors = regulars + int((~returning).sum())
        self.hostname = (rng.random(count) < 0.03).astype(np.int64)

    @staticmethod
    def _draw(rng: np.random.Generator, cat: _Catalog, count: int) -> dict[str, np.ndarray]:
        arrival = _pick(rng, cat.arrival_cum, count)
        channel = cat.arrival_channel[arrival]
        length = np.where(
            rng.random(count) < cat.bounce[channel], 1, np.minimum(1 + rng.geometric(0.22, count), _MAX_SESSION_EVENTS)
        )
        signup = rng.random(count) < cat.signup[channel]
        purchase = signup & (rng.random(count) < cat.purchase[channel])
        signup &= ~purchase
        newsletter = ~signup & ~purchase & (rng.random(count) < cat.newsletter[channel])
        script = np.select([purchase, signup, newsletter], [8, 4, 2], 0)
        length = np.where(script > 0, np.maximum(length, script + 1 + rng.integers(0, 3, count)), length)
        return {
            "arrival": arrival,
            "channel": channel,
            "length": length.astype(np.int64),
            "purchase": purchase,
            "signup": signup,
            "newsletter": newsletter,
        }


def _resolve_overlaps(visitor: np.ndarray, start: np.ndarray, end: np.ndarray, visitors: _Visitors) -> None:
    """Give a fresh visitor to any session closer than 30 minutes to the same visitor's previous one."""
    for _ in range(100):
        order = np.lexsort((start, visitor))
        v, s = visitor[order], start[order]
        previous_end = visitors.last_end[v]
        same = v[1:] == v[:-1]
        previous_end[1:] = np.where(same, end[order][:-1], previous_end[1:])
        clash = s < previous_end + SESSION_GAP_MS
        if not clash.any():
            break
        moved = order[clash]
        visitor[moved] = visitors.fresh(len(moved))
    np.maximum.at(visitors.last_end, visitor, end)


def _chunk(
    rng: np.random.Generator, cat: _Catalog, plan: _Plan, visitors: _Visitors, a: int, b: int, site_id: int, now_ms: int
) -> pa.Table:
    length = plan.length[a:b]
    n_sessions = b - a
    n = int(length.sum())
    session = np.repeat(np.arange(n_sessions), length)
    first = np.cumsum(length) - length
    position = np.arange(n) - first[session]
    is_first = position == 0

    # Time: seconds to minutes between events of a session, never later than now.
    gaps = np.clip(rng.lognormal(np.log(28_000), 0.9, n), 1_000, 600_000).astype(np.int64)
    gaps[is_first] = 0
    elapsed = np.cumsum(gaps)
    elapsed -= elapsed[first][session]
    timestamp = plan.start[a:b][session] + elapsed
    timestamp = np.minimum(timestamp, now_ms - (length[session] - 1 - position))
    end = timestamp[first + length - 1]
    visitor = plan.visitor[a:b].copy()
    _resolve_overlaps(visitor, plan.start[a:b], end, visitors)

    # Types, then the conversion scripts at the end of converting sessions.
    types = cat.type_codes[_pick(rng, cat.type_cum, n)]
    types[is_first] = _T["pageview"]
    fixed_path = np.full(n, -1)
    fixed_name = np.full(n, -1)
    fixed_props = np.full(n, -1)
    for kind, steps in cat.scripts.items():
        chosen = np.flatnonzero(getattr(plan, kind)[a:b])
        tail = first[chosen] + length[chosen] - len(steps)
        for offset, (type_code, step_path, extra) in enumerate(steps):
            rows = tail + offset
            types[rows] = type_code
            fixed_path[rows] = step_path
            if extra is None:
                continue
            if extra.startswith("form:"):
                fixed_props[rows] = cat.form_props[extra[5:]]
            else:
                variant_name, cum, variant_props = cat.variants[extra]
                fixed_name[rows] = variant_name
                fixed_props[rows] = variant_props[_pick(rng, cum, len(rows))]

    # Pages: a Markov walk over page categories, one pageview rank at a time across all sessions.
    is_pageview = types == _T["pageview"]
    pv = np.flatnonzero(is_pageview)
    pv_session = session[pv]
    per_session = np.bincount(pv_session, minlength=n_sessions)
    rank = np.arange(len(pv)) - (np.cumsum(per_session) - per_session)[pv_session]
    by_rank = np.argsort(rank, kind="stable")
    bounds = np.searchsorted(rank[by_rank], np.arange(int(rank.max()) + 2))
    pv_cat = np.empty(len(pv), dtype=np.int64)
    state = np.zeros(n_sessions, dtype=np.int64)
    session_channel = plan.channel[a:b]
    pv_fixed = fixed_path[pv]
    for r in range(len(bounds) - 1):
        ids = by_rank[bounds[r] : bounds[r + 1]]
        s = pv_session[ids]
        if r == 0:
            c = _pick_rows(rng, cat.entry_cum, session_channel[s])
        else:
            c = _pick_rows(rng, cat.transition_cum, state[s])
        forced = pv_fixed[ids]
        c = np.where(forced >= 0, cat.path_cat[np.maximum(forced, 0)], c)
        pv_cat[ids] = c
        state[s] = c
    pv_path = cat.cat_path_table[pv_cat, _pick_rows(rng, cat.cat_path_cum, pv_cat)]
    pv_path = np.where(pv_fixed >= 0, pv_fixed, pv_path)
    path = np.zeros(n, dtype=np.int64)
    path[pv] = pv_path
    path = path[np.maximum.accumulate(np.where(is_pageview, np.arange(n), 0))]  # other events: the page they are on
    category = cat.path_cat[path]

    # Event names and props by type.
    name = np.zeros(n, dtype=np.int64)
    props = np.zeros(n, dtype=np.int64)

    def rows_of(type_name: str) -> np.ndarray:
        return np.flatnonzero(types == _T[type_name])

    rows = rows_of("performance")
    name[rows] = cat.web_vitals
    perf_rows = rows
    rows = rows_of("error")
    which = _pick(rng, cat.error_cum, len(rows))
    name[rows], props[rows] = cat.error_name[which], cat.error_props[which]
    rows = rows_of("outbound")
    props[rows] = cat.outbound_props[_pick(rng, cat.outbound_cum, len(rows))]
    rows = rows_of("button_click")
    props[rows] = cat.button_props[_pick(rng, cat.button_cum, len(rows))]
    rows = rows_of("copy")
    props[rows] = cat.copy_props[_pick(rng, cat.copy_cum, len(rows))]
    rows = rows_of("form_submit")
    props[rows] = cat.form_by_cat[category[rows]]
    rows = rows_of("input_change")
    c = category[rows]
    props[rows] = cat.input_table[c, (rng.random(len(rows)) * cat.input_count[c]).astype(np.int64)]
    rows = rows_of("custom_event")
    which = _pick(rng, cat.custom_cum, len(rows))
    name[rows], props[rows] = cat.custom_name[which], cat.custom_props[which]
    name = np.where(fixed_name >= 0, fixed_name, name)
    props = np.where(fixed_props >= 0, fixed_props, props)

    # Web vitals (ms, except CLS), slower on phones and tablets; INP only when the visitor interacted.
    event_visitor = visitor[session]
    fields = visitors.fields
    vitals = {key: np.full(n, np.nan) for key in ("lcp", "cls", "inp", "fcp", "ttfb")}
    k = len(perf_rows)
    slow = np.where(cat.device_mobile[fields["device"][event_visitor[perf_rows]]], 1.6, 1.0)
    lcp = np.round(rng.lognormal(np.log(1700), 0.45, k) * slow)
    vitals["lcp"][perf_rows] = lcp
    vitals["fcp"][perf_rows] = np.round(lcp * rng.uniform(0.45, 0.8, k))
    vitals["ttfb"][perf_rows] = np.round(rng.lognormal(np.log(240), 0.55, k) * slow)
    vitals["cls"][perf_rows] = np.round(rng.exponential(0.06, k), 3)
    inp = np.round(rng.lognormal(np.log(130), 0.6, k) * slow)
    vitals["inp"][perf_rows] = np.where(rng.random(k) < 0.35, np.nan, inp)

    arrival = np.where(is_first, plan.arrival[a:b][session] + 1, 0)
    arrival_index = pa.array(arrival)
    user_ids, identified = visitors.id_arrays()
    visitor_index = pa.array(event_visitor)
    place = pa.array(fields["place"][event_visitor])

    def strings(table: pa.Array | _Strings, index: np.ndarray | pa.Array) -> pa.Array:
        values = table.array() if isinstance(table, _Strings) else table
        return values.take(index if isinstance(index, pa.Array) else pa.array(index))

    columns = {
        "site_id": pa.array(np.full(n, site_id, dtype=np.int32)),
        "timestamp": pa.array(timestamp, type=pa.timestamp("ms")),
        "session_id": _hex_strings(rng, n_sessions, 8).take(pa.array(session)),
        "user_id": user_ids.take(visitor_index),
        "identified_user_id": identified.take(visitor_index),
        "hostname": cat.hostnames.take(pa.array(plan.hostname[a:b][session])),
        "pathname": cat.paths.take(pa.array(path)),
        "page_title": cat.titles.take(pa.array(path)),
        "browser": strings(cat.browsers, cat.device_browser[fields["device"][event_visitor]]),
        "browser_version": strings(cat.browser_versions, fields["browser_version"][event_visitor]),
        "operating_system": strings(cat.systems, cat.device_os[fields["device"][event_visitor]]),
        "operating_system_version": strings(cat.system_versions, fields["os_version"][event_visitor]),
        "language": strings(cat.languages, fields["language"][event_visitor]),
        "country": cat.countries.take(place),
        "region": cat.regions.take(place),
        "city": cat.cities.take(place),
        "screen_width": pa.array(fields["screen_width"][event_visitor].astype(np.int32)),
        "screen_height": pa.array(fields["screen_height"][event_visitor].astype(np.int32)),
        "device_type": strings(cat.device_types, cat.device_type[fields["device"][event_visitor]]),
        "type": cat.types.take(pa.array(types)),
        "event_name": strings(cat.names, name),
        "props": strings(cat.props, props),
        **{key: pa.array(values, type=pa.float64(), from_pandas=True) for key, values in vitals.items()},
    }
    for key, values in cat.arrival_columns.items():
        columns[key] = values.take(arrival_index)
    return pa.Table.from_arrays([columns[name] for name, _ in EVENT_COLUMNS], schema=EVENT_SCHEMA)


def _chunk_edges(length: np.ndarray, chunk_rows: int) -> np.ndarray:
    """The first session of each chunk of about ``chunk_rows`` events, then the number of sessions.

    Where a chunk that size holds at least half a row group of sessions, each chunk but the last holds the
    nearest whole number of row groups of them (``ROW_GROUP_ROWS``); smaller chunks are cut by events alone.
    """
    ends = np.cumsum(length)
    sessions = len(length)
    groups = round(chunk_rows * sessions / int(ends[-1]) / ROW_GROUP_ROWS)
    if groups >= 1:
        cuts = np.arange(groups * ROW_GROUP_ROWS, sessions, groups * ROW_GROUP_ROWS)
    else:
        cuts = np.searchsorted(ends, np.arange(chunk_rows, int(ends[-1]), chunk_rows), side="left") + 1
    return np.unique(np.concatenate([[0], cuts, [sessions]]))


def generate_events(
    site_id: int,
    n: int,
    days: int = 30,
    seed: int | None = None,
    now: datetime | None = None,
    error_messages: int = 8,
    *,
    domain: str = "example.com",
    chunk_rows: int = CHUNK_ROWS,
) -> Iterator[pa.Table]:
    """Yield ``EVENT_SCHEMA`` tables (about ``chunk_rows`` rows each, whole sessions) holding exactly ``n`` events;
    large chunks hold whole row groups of sessions (``_chunk_edges``).

    ``now`` (naive UTC or aware; default: the current time) is when the traffic ends; ``days`` how far back it
    starts. ``error_messages`` is how many distinct recurring JavaScript errors appear. ``domain`` names the
    site's hostname (and the brand in page titles). The same ``seed`` and ``now`` give the same rows.
    """
    if n < 0:
        raise ValueError("n must not be negative")
    if days < 1:
        raise ValueError("days must be at least 1")
    if error_messages < 1:
        raise ValueError("error_messages must be at least 1")
    if n == 0:
        return
    if now is None:
        now = datetime.now(UTC)
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    now_ms = int(now.timestamp() * 1000)
    rng = np.random.default_rng(seed)
    cat = _Catalog(domain, error_messages)
    plan = _Plan(rng, cat, n, days, now_ms)
    visitors = _Visitors(rng, cat, plan.visitors)
    edges = _chunk_edges(plan.length, chunk_rows)
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        yield _chunk(rng, cat, plan, visitors, int(a), int(b), site_id, now_ms)


def write_events(
    writer: Any,
    site_id: int,
    n: int,
    *,
    days: int = 30,
    seed: int | None = None,
    now: datetime | None = None,
    domain: str = "example.com",
    error_messages: int = 8,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Generate ``n`` events for a site and commit them through ``writer`` (a ``BatchWriter``); return the count.

    Tables go through the same group-commit path as ingestion; a few wait in the writer's queue at a time so
    generating the next chunk overlaps with inserting the previous one. ``progress`` hears each committed count.
    """
    pending: list[Future[int]] = []
    inserted = 0

    def settle(future: Future[int]) -> None:
        nonlocal inserted
        done = future.result()
        inserted += done
        if progress:
            progress(done)

    for table in generate_events(site_id, n, days, seed, now=now, error_messages=error_messages, domain=domain):
        pending.append(writer.submit(table))
        while len(pending) >= _IN_FLIGHT:
            settle(pending.pop(0))
    for future in pending:
        settle(future)
    return inserted
