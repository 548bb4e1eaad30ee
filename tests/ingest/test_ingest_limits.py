"""One table of field length limits: the reference checker, the fast path and the documented schema agree."""

from __future__ import annotations

import pytest

from api_backend.errors import InvalidRequestError
from api_backend.ingest.fastpath import fast_event
from api_backend.ingest.payload import EVENT_NAME_LIMIT, STRING_LIMITS, parse_event
from api_backend.routes.track import TrackEventBody

ASCII = "a"


def _event(field: str, length: int) -> dict:
    event = {"site_id": 1, "type": "custom_event", "event_name": "signup", field: ASCII * length}
    if field == "hostname":
        event[field] = "h" * length
    return event


@pytest.mark.parametrize("field", sorted([*STRING_LIMITS, "event_name"]))
def test_limits001_fast_path_and_checker_share_each_limit(field: str) -> None:
    limit = EVENT_NAME_LIMIT if field == "event_name" else STRING_LIMITS[field]
    at_limit = _event(field, limit)
    assert fast_event(at_limit) is not None
    parse_event(at_limit)
    over = _event(field, limit + 1)
    assert fast_event(over) is None
    with pytest.raises(InvalidRequestError) as raised:
        parse_event(over)
    assert [d.field for d in raised.value.details] == [field]


@pytest.mark.parametrize("field", sorted([*STRING_LIMITS, "event_name"]))
def test_limits002_documented_schema_states_the_same_limits(field: str) -> None:
    limit = EVENT_NAME_LIMIT if field == "event_name" else STRING_LIMITS[field]
    schema = TrackEventBody.model_json_schema()["properties"][field]
    assert [option.get("maxLength") for option in schema["anyOf"] if option.get("type") == "string"] == [limit]
