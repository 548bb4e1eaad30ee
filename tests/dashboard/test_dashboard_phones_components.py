"""The markup the phone layout and the theme switch rely on, checked without a browser."""

from __future__ import annotations

from datetime import date

from dashboard import ids
from dashboard.components.frame import analytics_frame, controls_summary, navbar
from dashboard.state import ViewState

TODAY = date(2026, 3, 31)


def find(component, wanted: str):
    """The component with id ``wanted`` inside ``component`` (depth first), or None."""
    if getattr(component, "id", None) == wanted:
        return component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list) else [children]:
        if child is not None and not isinstance(child, str):
            found = find(child, wanted)
            if found is not None:
                return found
    return None


def test_navbar_menu_button_controls_the_links_and_account_side():
    bar = navbar()
    toggle = find(bar, ids.NAV_TOGGLE)
    menu = find(bar, ids.NAV_MENU)
    assert toggle.to_plotly_json()["props"]["aria-expanded"] == "false"
    assert toggle.to_plotly_json()["props"]["aria-controls"] == ids.NAV_MENU
    # Links, site picker and sign-out all fold into the menu.
    for inside in (ids.NAV_LINKS, ids.SITE_PICKER, ids.SIGN_OUT, ids.USER_EMAIL):
        assert find(menu, inside) is not None, inside
    # The theme switch stays in the bar, outside the menu.
    switch = find(bar, ids.THEME_TOGGLE)
    assert switch is not None and find(menu, ids.THEME_TOGGLE) is None
    assert switch.to_plotly_json()["props"]["data-theme-toggle"] == "1"


def test_controls_summary_names_the_range_and_the_filters():
    last_30 = ViewState(site_id=1, start_date=date(2026, 3, 2), end_date=TODAY)
    assert controls_summary(last_30, TODAY) == "30 days"
    custom = ViewState(site_id=1, start_date=date(2026, 1, 5), end_date=date(2026, 2, 1))
    assert controls_summary(custom, TODAY) == "5 Jan – 1 Feb 2026"
    filtered = custom.replace(filters=({"parameter": "country", "type": "equals", "value": ["DE"]},))
    assert controls_summary(filtered, TODAY) == "5 Jan – 1 Feb 2026 · 1 filter"


def test_analytics_frame_puts_the_fold_button_right_before_the_controls():
    view = ViewState(site_id=1, start_date=date(2026, 3, 2), end_date=TODAY)
    children = analytics_frame(view, today=TODAY).children
    position = [getattr(c, "id", None) for c in children].index(ids.CONTROLS_TOGGLE)
    # The CSS folds the controls with "toggle[aria-expanded=false] + .controls".
    assert children[position + 1].id == ids.CONTROLS
    props = children[position].to_plotly_json()["props"]
    assert props["aria-expanded"] == "false" and props["aria-controls"] == ids.CONTROLS
