"""Usage page builders, checked without a browser against totals computed independently with pandas."""

from __future__ import annotations

import random
from datetime import date, timedelta

import pandas as pd

from api_client.models import UsageRow
from dashboard.components import usage as comp

FIELDS = [field for field, _, _ in comp.USAGE_CATEGORIES]


def rows(days: int = 7, seed: int = 3) -> list[UsageRow]:
    rng = random.Random(seed)
    out = []
    for offset in range(days):
        counts = {field: rng.randint(0, 500) for field in FIELDS}
        out.append(
            UsageRow(
                event_date=(date(2026, 2, 1) + timedelta(days=offset)).isoformat(),
                event_count=sum(counts.values()),
                **counts,
            )
        )
    rng.shuffle(out)  # the builder must not rely on the API's order
    return out


def test_nine_categories():
    assert len(comp.USAGE_CATEGORIES) == 9
    assert FIELDS == [
        "pageview_count",
        "custom_event_count",
        "performance_count",
        "outbound_count",
        "error_count",
        "button_click_count",
        "copy_count",
        "form_submit_count",
        "input_change_count",
    ]


def test_frame_sorted_by_day_and_totals_equal_sum_of_rows():
    data = rows()
    frame = comp.usage_frame(data)
    assert frame["event_date"].tolist() == [date(2026, 2, 1) + timedelta(days=i) for i in range(7)]
    totals = comp.usage_totals(frame)
    truth = pd.DataFrame([row.model_dump() for row in data])
    for field in [*FIELDS, "event_count"]:
        assert totals[field] == int(truth[field].sum())
    assert totals["event_count"] == sum(totals[field] for field in FIELDS)


def test_empty_rows_give_zero_totals():
    frame = comp.usage_frame([])
    assert frame.empty
    assert comp.usage_totals(frame) == {field: 0 for field in [*FIELDS, "event_count"]}


def test_figure_is_stacked_with_one_trace_per_category():
    frame = comp.usage_frame(rows(3))
    figure = comp.usage_figure(frame)
    assert figure.layout.barmode == "stack"
    assert [trace.name for trace in figure.data] == [label for _, label, _ in comp.USAGE_CATEGORIES]
    assert list(figure.data[0].x) == ["2026-02-01", "2026-02-02", "2026-02-03"]
    assert list(figure.data[4].y) == frame["error_count"].tolist()


def test_totals_grid_shows_formatted_numbers_and_shares():
    totals = {field: 0 for field in FIELDS}
    totals.update(pageview_count=7500, error_count=2500, event_count=10000)
    grid = comp.usage_totals_grid(totals, item_id=lambda field: f"usage-total-{field}")
    tiles = grid.children
    assert len(tiles) == 10
    overall = tiles[0].children
    assert overall[1].children == "10,000" and overall[1].id == "usage-total-event_count"
    pageviews = tiles[1].children
    assert pageviews[0].children[1] == "Page views"
    assert pageviews[1].children == "7,500" and pageviews[2].children == "75.0% of all"
    errors = tiles[5].children
    assert errors[1].id == "usage-total-error_count" and errors[2].children == "25.0% of all"


def test_legend_lists_categories_in_their_order():
    figure = comp.usage_figure(comp.usage_frame(rows(2)))
    assert figure.layout.legend.traceorder == "normal"
