"""The channel ranking builders, checked without a browser."""

from __future__ import annotations

import json

from api_client.models import Breakdown, BreakdownRow
from dashboard.components import channels as channel_ui


def row(value: str, sessions: int, conversions: int, low: float, high: float) -> BreakdownRow:
    return BreakdownRow(
        value=value,
        sessions=sessions,
        conversions=conversions,
        conversion_rate=conversions / sessions if sessions else 0.0,
        ci_low=low,
        ci_high=high,
        small_sample=sessions < 30,
    )


ROWS = [
    row("Referral", 3, 1, 0.0615, 0.7923),
    row("Organic Search", 400, 60, 0.1186, 0.1882),
    row("", 50, 10, 0.1124, 0.3304),
]


def test_channel_frame_sorts_by_rate_and_labels_direct():
    df = channel_ui.channel_frame(ROWS)
    assert list(df["channel"]) == ["Referral", "Direct", "Organic Search"]
    assert list(df["conversion_rate_percent"]) == [33.33, 20.0, 15.0]
    assert list(df["ci_low_percent"]) == [6.15, 11.24, 11.86]
    assert list(df["small_sample"]) == [True, False, False]
    assert channel_ui.channel_frame([]).empty


def test_channel_chart_bars_with_asymmetric_intervals_best_on_top():
    graph = channel_ui.channel_chart(channel_ui.channel_frame(ROWS), "Pricing")
    bar = graph.figure.data[0]
    assert bar.orientation == "h"
    assert list(bar.y) == ["Organic Search", "Direct", "Referral"]  # drawn bottom-up: best last = on top
    assert list(bar.x) == [15.0, 20.0, 33.33]
    assert [round(v, 2) for v in bar.error_x.array] == [3.82, 13.04, 45.9]
    assert [round(v, 2) for v in bar.error_x.arrayminus] == [3.14, 8.76, 27.18]
    assert list(bar.marker.color) == [channel_ui.ACCENT, channel_ui.ACCENT, channel_ui.MUTED]
    assert "too few sessions" in bar.hovertext[2] and "too few sessions" not in bar.hovertext[0]
    assert "Pricing" in graph.figure.layout.xaxis.title.text


def test_channel_table_marks_small_samples():
    table = channel_ui.channel_table(channel_ui.channel_frame(ROWS))
    assert [r["channel"] for r in table.data] == ["Referral", "Direct", "Organic Search"]
    assert table.data[0]["note"] == "few sessions: rate unstable" and table.data[1]["note"] == ""
    assert table.data[1]["interval"] == "11.2% – 33.0%"
    assert [r["rank"] for r in table.data] == [1, 2, 3]


def test_ranking_content_and_empty_states():
    ranking = Breakdown(rows=ROWS, total_sessions=453, total_conversions=71)
    text = json.dumps([c.to_plotly_json() for c in channel_ui.ranking_content(ranking, "Pricing")], default=str)
    assert "453" in text and "15.7%" in text  # 71 / 453 overall
    empty = channel_ui.ranking_content(Breakdown(rows=[], total_sessions=0, total_conversions=0), "Pricing")
    assert "No sessions in this range" in json.dumps(empty.to_plotly_json(), default=str)
    assert channel_ui.goal_options([{"goal_id": 4, "name": None}]) == [{"label": "Goal 4", "value": 4}]
