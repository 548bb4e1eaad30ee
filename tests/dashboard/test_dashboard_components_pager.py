"""The one pager of the dashboard (``dashboard.components.pager``), checked as components without a browser."""

from __future__ import annotations

import pytest

from dashboard.components.pager import SMALL_LINKS, button_pager, link_pager, page_label, total_pages


def _nodes(component) -> list:
    found = [component]
    children = getattr(component, "children", None)
    if isinstance(children, list | tuple):
        for child in children:
            found += _nodes(child)
    elif children is not None and not isinstance(children, str | int | float):
        found += _nodes(children)
    return found


def _parts(component) -> dict[str, object]:
    """The pager's previous / next elements and its label and total, by class."""
    parts = {}
    for node in _nodes(component):
        for name in ("pager-prev", "pager-next", "pager-label", "pager-total"):
            if name in (getattr(node, "className", None) or "").split():
                parts[name] = node
    return parts


def test_total_pages_is_at_least_one():
    assert [total_pages(n, 10) for n in (0, 1, 10, 11, 21)] == [1, 1, 1, 2, 3]


def test_page_label_reads_thousands_and_never_of_zero():
    assert page_label(2, 3) == "Page 2 of 3"
    assert page_label(1, 0) == "Page 1 of 1"
    assert page_label(1_200, 1_500) == "Page 1,200 of 1,500"
    assert page_label(4, None) == "Page 4"


@pytest.mark.parametrize(
    ("page", "total", "label", "prev_href", "next_href"),
    [
        # 23 rows of 10 per page: 3 pages.
        (1, 23, "Page 1 of 3", None, "?page=2"),
        (2, 23, "Page 2 of 3", "?page=1", "?page=3"),
        (3, 23, "Page 3 of 3", "?page=2", None),
        # Past the end (an edited address): Previous leads back to the last page.
        (7, 23, "Page 7 of 3", "?page=3", None),
        # Exactly one full page: no next.
        (1, 10, "Page 1 of 1", None, None),
    ],
)
def test_link_pager_counts_pages_and_disables_the_ends(page, total, label, prev_href, next_href):
    parts = _parts(link_pager(page, total_pages(total, 10), lambda p: f"?page={p}", total=total, noun="error group"))
    assert parts["pager-label"].children == label
    assert parts["pager-total"].children == f"{total} error groups"
    for name, href in (("pager-prev", prev_href), ("pager-next", next_href)):
        node = parts[name]
        if href is None:
            assert type(node).__name__ == "Span" and "disabled" in node.className.split()
            assert node.to_plotly_json()["props"]["aria-disabled"] == "true"
        else:
            assert type(node).__name__ == "Link" and node.href == href


def test_link_pager_total_is_optional_and_singular():
    assert "pager-total" not in _parts(link_pager(1, 1, str))
    assert _parts(link_pager(1, 1, str, total=1, noun="goal"))["pager-total"].children == "1 goal"
    assert _parts(link_pager(1, 0, str, total=0))["pager-label"].children == "Page 1 of 1"


def test_link_pager_with_an_unknown_number_of_pages_asks_has_next():
    more = _parts(link_pager(2, None, lambda p: f"?page={p}", has_next=True))
    assert more["pager-label"].children == "Page 2"
    assert more["pager-next"].href == "?page=3" and more["pager-prev"].href == "?page=1"
    last = _parts(link_pager(2, None, lambda p: f"?page={p}", has_next=False))
    assert "disabled" in last["pager-next"].className.split()


def test_link_pager_takes_the_small_look_under_tables():
    parts = _parts(link_pager(2, 3, str, link_class=SMALL_LINKS))
    assert parts["pager-prev"].className == f"{SMALL_LINKS} pager-prev"
    assert parts["pager-next"].className == f"{SMALL_LINKS} pager-next"


def test_button_pager_disables_its_ends():
    first = _parts(button_pager(1, 3, prev_id="p", next_id="n"))
    assert (first["pager-prev"].disabled, first["pager-next"].disabled) == (True, False)
    assert (first["pager-prev"].id, first["pager-next"].id) == ("p", "n")
    assert first["pager-label"].children == "Page 1 of 3"
    last = _parts(button_pager(3, 3, prev_id="p", next_id="n", label_id="l"))
    assert (last["pager-prev"].disabled, last["pager-next"].disabled) == (False, True)
    assert last["pager-label"].id == "l"
    only = _parts(button_pager(1, 0, prev_id="p", next_id="n"))
    assert only["pager-next"].disabled is True and only["pager-label"].children == "Page 1 of 1"
