"""The goals builders, checked as component JSON and DataFrames without a browser."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from api_client.models import Goal, GoalSession
from dashboard.components import goal_editor
from dashboard.components import goals as goal_ui


def as_json(component) -> str:
    return json.dumps(component.to_plotly_json(), default=lambda o: o.to_plotly_json())


PATH = Goal(
    goal_id=1,
    name="Pricing",
    goal_type="path",
    config={"pathPattern": "/pricing/**"},
    total_conversions=4,
    total_sessions=10,
    conversion_rate=0.4,
)
EVENT = Goal(
    goal_id=2,
    name="Pro signup",
    goal_type="event",
    config={"eventName": "signup", "eventPropertyKey": "plan", "eventPropertyValue": "pro"},
    total_conversions=1,
    total_sessions=3,
    conversion_rate=1 / 3,
)


def test_goal_target_in_words():
    assert goal_ui.goal_target(PATH) == "/pricing/**"
    assert goal_ui.goal_target(EVENT) == "signup where plan = pro"
    config = {"eventName": "trial", "eventPropertyKey": "paid", "eventPropertyValue": True}
    flag = Goal(goal_id=3, goal_type="event", config=config)
    assert goal_ui.goal_target(flag) == "trial where paid = true"
    assert goal_ui.goal_target(Goal(goal_id=4, goal_type="outbound", config={})) == "any outbound link"
    copy = Goal(goal_id=5, goal_type="copy", config={"valuePattern": "*@example.com"})
    assert goal_ui.goal_target(copy) == "copy matching *@example.com"


def test_goals_table_rows_rates_and_bars():
    table = goal_ui.goals_table([PATH, EVENT], lambda goal_id: f"/goal-sessions?goal={goal_id}")
    body = table.children[2].children
    assert [row.id for row in body] == ["goal-row-1", "goal-row-2"]
    text = as_json(table)
    assert "40.0%" in text and "33.3%" in text
    assert '"width": "40.00%"' in text and '"width": "33.33%"' in text  # the bar is the rate itself
    assert "/goal-sessions?goal=1" in text
    assert '"action": "edit"' in text and '"action": "delete"' in text and '"action": "clone"' in text


def test_goals_table_read_only_has_no_actions():
    text = as_json(goal_ui.goals_table([PATH], lambda goal_id: "/x", read_only=True))
    assert "goals-action" not in text and "Edit" not in text


def test_goals_frame_for_csv():
    df = goal_ui.goals_frame([PATH, EVENT])
    assert list(df["name"]) == ["Pricing", "Pro signup"]
    assert list(df["conversion_rate_percent"]) == [40.0, 33.33]
    assert list(df["matches"]) == ["/pricing/**", "signup where plan = pro"]
    assert goal_ui.goals_frame([]).columns.tolist()[0] == "goal_id"


def test_form_values_for_create_edit_clone():
    assert goal_editor.form_values(None, "create")["goal_type"] == "path"
    edit = goal_editor.form_values(EVENT.model_dump(mode="json"), "edit")
    assert edit["goal_id"] == 2 and edit["name"] == "Pro signup" and edit["event_property_value"] == "pro"
    clone = goal_editor.form_values(EVENT, "clone")
    assert clone["goal_id"] is None and clone["name"] == "Pro signup (copy)" and clone["event_name"] == "signup"


def test_goal_config_sends_only_the_type_fields_with_typed_values():
    values = {
        "path_pattern": " /blog/* ",
        "event_name": "signup",
        "event_property_key": "n",
        "event_property_value": "3",
    }
    assert goal_editor.goal_config("path", values) == {"pathPattern": "/blog/*"}
    assert goal_editor.goal_config("event", values) == {
        "eventName": "signup",
        "eventPropertyKey": "n",
        "eventPropertyValue": 3,
    }
    assert goal_editor.goal_config("event", {**values, "event_property_value": "true"})["eventPropertyValue"] is True
    assert goal_editor.goal_config("event", {**values, "event_property_value": "pro"})["eventPropertyValue"] == "pro"
    assert goal_editor.goal_config("event", {"event_name": "signup"}) == {"eventName": "signup"}
    assert goal_editor.goal_config("copy", {"value_pattern": ""}) == {}


def test_field_errors_maps_api_details_to_form_fields():
    fields, other = goal_editor.field_errors(
        [
            {"field": "config.pathPattern", "message": "must not be empty"},
            {"field": "name", "message": "must be at most 255 characters"},
            {"field": "body", "message": "is odd"},
        ]
    )
    assert fields == {"path_pattern": "Must not be empty", "name": "Must be at most 255 characters"}
    assert other == ["body: is odd"]


def test_sessions_frame_in_the_chosen_zone():
    session = GoalSession(
        session_id="s1",
        session_start=datetime(2026, 3, 1, 23, 30, tzinfo=UTC),
        session_end=datetime(2026, 3, 1, 23, 45, tzinfo=UTC),
        session_duration=905,
        pageviews=3,
        channel="",
        entry_page="/",
        exit_page="/pricing",
    )
    df = goal_ui.sessions_frame([session], "Europe/Berlin")
    row = df.iloc[0]
    assert row["session_start"] == "2026-03-02 00:30:00"  # UTC+1 in March
    assert row["duration"] == "15m 05s" and row["duration_seconds"] == 905
    assert row["channel"] == "Direct"
    assert goal_ui.sessions_frame([session], "UTC").iloc[0]["session_start"] == "2026-03-01 23:30:00"


def test_sessions_body_pages_from_the_goal_total():
    from dashboard.state import ViewState

    session = GoalSession(
        session_id="s1",
        session_start=datetime(2026, 3, 1, tzinfo=UTC),
        session_end=datetime(2026, 3, 1, 0, 5, tzinfo=UTC),
        pageviews=1,
    )
    view = ViewState(page=2, time_zone="UTC")
    body = goal_ui.sessions_body([session] * 25, view, lambda p: f"?page={p}", 25, total=60)
    text = as_json(body[1])
    assert "Page 2 of 3" in text and "60 sessions, latest end first" in text and "?page=3" in text
    # Both ends of a session are shown, and the header of the one the list is sorted by says so.
    columns = {c["id"]: c["name"] for c in body[0].columns}
    assert columns["session_start"] == "Started (UTC)" and columns["session_end"] == "Ended (UTC) ↓"
    assert body[0].data[0]["session_end"] == "2026-03-01 00:05"
    empty = goal_ui.sessions_body([], ViewState(), lambda p: "", 25, total=0)
    assert "No session reached this goal" in as_json(empty)


def test_referrer_host_for_display():
    assert goal_ui.referrer_host("https://www.google.com/search?q=x") == "www.google.com"
    assert goal_ui.referrer_host("") == ""
    assert goal_ui.referrer_host("android-app://com.slack") == "com.slack"
    assert goal_ui.referrer_host("not a url") == "not a url"


def test_goals_table_says_the_sessions_once_and_no_rate_out_of_nothing():
    table = goal_ui.goals_table([PATH, PATH.model_copy(update={"goal_id": 7})], lambda goal_id: "/x")
    caption, header, body = table.children
    assert caption.children == "Conversions out of 10 sessions in this range"
    assert "Sessions" not in [th.children for th in header.children.children]
    assert all(len(row.children) == 6 for row in body.children)  # name, type, target, conversions, rate, actions
    empty = Goal(goal_id=9, name="Quiet", goal_type="path", config={"pathPattern": "/"}, total_sessions=0)
    rates = re.findall(r'"children": "([^"]*)", "className": "rate-value"', as_json(goal_ui.goals_table([empty], str)))
    assert rates == ["\\u2013"]  # "–" as JSON writes it
