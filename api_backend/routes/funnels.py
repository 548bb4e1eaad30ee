"""Funnels: sessions reaching each of 2..20 ordered steps in the window."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body

from api_backend.auth import ServicesDep, SiteReader
from api_backend.errors import FieldError, InvalidRequestError
from api_backend.query.funnels import build_funnel_query
from api_backend.routes.read_params import ReadQuery

router = APIRouter(tags=["analytics"])

STEP_TYPES = ("page", "event", "outbound", "button_click", "form_submit", "copy")
STEP_KEYS = {"type", "value", "name", "hostname", "eventPropertyKey", "eventPropertyValue", "propertyFilters"}
MIN_STEPS, MAX_STEPS = 2, 20
MAX_TEXT = 512
FUNNEL_EXAMPLE = {"steps": [{"type": "page", "value": "/pricing"}, {"type": "event", "value": "signup"}]}


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | bool | int | float)


def validate_funnel_body(body: Any) -> list[dict[str, Any]]:
    """The validated steps; 400 listing every problem otherwise."""
    if not isinstance(body, dict) or not isinstance(body.get("steps"), list):
        raise InvalidRequestError.for_field("steps", "must be a list of steps")
    steps = body["steps"]
    if not MIN_STEPS <= len(steps) <= MAX_STEPS:
        raise InvalidRequestError.for_field("steps", f"a funnel needs {MIN_STEPS} to {MAX_STEPS} steps")
    errors: list[FieldError] = []
    clean: list[dict[str, Any]] = []
    for i, step in enumerate(steps):
        where = f"steps[{i}]"
        if not isinstance(step, dict):
            errors.append(FieldError(where, "must be an object {type, value, name?}"))
            continue
        for key in set(step) - STEP_KEYS:
            errors.append(FieldError(f"{where}.{key}", "is not a known field"))
        if step.get("type") not in STEP_TYPES:
            errors.append(FieldError(f"{where}.type", f"must be one of {', '.join(STEP_TYPES)}"))
        value = step.get("value")
        blank_ok = step.get("type") not in ("page", "event")
        if not isinstance(value, str) or len(value) > MAX_TEXT or (not blank_ok and not value.strip()):
            errors.append(FieldError(f"{where}.value", f"must be a non-empty string of at most {MAX_TEXT} characters"))
        for key in ("name", "hostname"):
            if step.get(key) is not None and (not isinstance(step[key], str) or len(step[key]) > MAX_TEXT):
                errors.append(FieldError(f"{where}.{key}", f"must be a string of at most {MAX_TEXT} characters"))
        key, prop = step.get("eventPropertyKey"), step.get("eventPropertyValue")
        if (key is None) != (prop is None):
            errors.append(
                FieldError(f"{where}.eventPropertyKey", "eventPropertyKey and eventPropertyValue go together")
            )
        elif key is not None and (
            not isinstance(key, str) or not key or '"' in key or "\\" in key or not _is_scalar(prop)
        ):
            errors.append(FieldError(f"{where}.eventPropertyKey", "needs a key string and a string, number or boolean"))
        filters = step.get("propertyFilters")
        if filters is not None and not (
            isinstance(filters, list)
            and all(
                isinstance(f, dict)
                and isinstance(f.get("key"), str)
                and f["key"]
                and '"' not in f["key"]
                and "\\" not in f["key"]
                and _is_scalar(f.get("value"))
                for f in filters
            )
        ):
            errors.append(FieldError(f"{where}.propertyFilters", "must be a list of {key, value}"))
        clean.append(step)
    if errors:
        raise InvalidRequestError(f"{errors[0].field}: {errors[0].message}", errors)
    return clean


def _rate(part: int, whole: int) -> float | None:
    return part * 100 / whole if whole else None


@router.post("/sites/{site_id}/funnels/analyze")
def analyze_funnel(
    access: SiteReader,
    services: ServicesDep,
    params: ReadQuery,
    body: Annotated[Any, Body(examples=[FUNNEL_EXAMPLE])],
) -> dict[str, Any]:
    """Sessions per step (each step strictly after the previous), conversion and drop-off in percent."""
    steps = validate_funnel_body(body)
    scope = params.scope(access.site.site_id)
    row = services.reader.rows(build_funnel_query(scope, steps, services.reader.dialect), scope)[0]
    counts = [int(row[f"s{i}"]) for i in range(1, len(steps) + 1)]
    data = []
    for i, step in enumerate(steps):
        sessions = counts[i]
        dropoff = 0.0 if i == 0 else (None if not counts[i - 1] else (1 - sessions / counts[i - 1]) * 100)
        data.append(
            {
                "step_number": i + 1,
                "step_name": step.get("name") or step["value"],
                "sessions": sessions,
                "visitors": sessions,
                "conversion_rate": _rate(sessions, counts[0]),
                "dropoff_rate": dropoff,
            }
        )
    return {"data": data}
