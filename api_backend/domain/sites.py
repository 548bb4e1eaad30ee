"""Sites as the API shows them, and validation of site creation and configuration bodies."""

from __future__ import annotations

import re
from typing import Any

from api_backend.domain.countries import COUNTRY_CODE_HINT, is_country_code
from api_backend.errors import FieldError, InvalidRequestError
from api_backend.formats import iso_utc
from api_backend.ipranges import IPPatternError, parse_ip_pattern
from api_backend.store.models import Site

__all__ = [
    "BOOLEAN_CONFIG_FIELDS",
    "CONFIG_FIELDS",
    "SITE_KEY_MESSAGE",
    "check_site_key",
    "is_site_key",
    "normalize_domain",
    "site_config_json",
    "site_json",
    "validate_config_update",
    "validate_site_create",
]

# API name -> column name, for the boolean switches of a site.
BOOLEAN_CONFIG_FIELDS: dict[str, str] = {
    "public": "public",
    "saltUserIds": "salt_user_ids",
    "blockBots": "block_bots",
    "sessionReplay": "session_replay",
    "webVitals": "web_vitals",
    "trackErrors": "track_errors",
    "trackOutbound": "track_outbound",
    "trackUrlParams": "track_url_params",
}
CONFIG_FIELDS: dict[str, str] = {
    **BOOLEAN_CONFIG_FIELDS,
    "excludedIPs": "excluded_ips",
    "excludedCountries": "excluded_countries",
}
# A site is named by its siteId (ASCII digits) or its random string id (ASCII letters and digits): anything
# else, such as "²" or Arabic-Indic digits that str.isdigit() accepts, names no site and is refused as such.
_SITE_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")
SITE_KEY_MESSAGE = "must be the numeric siteId (ASCII digits) or the site's string id"
MAX_EXCLUDED_IPS = 100
MAX_EXCLUDED_COUNTRIES = 250

_LABEL = r"(?:[^\W_](?:[^\W_]|-){0,61}[^\W_]|[^\W_])"
_DOMAIN = re.compile(rf"^(?:{_LABEL}\.)+[^\W\d_]{{2,}}$")


def site_json(site: Site, *, is_owner: bool, member: bool = True) -> dict[str, Any]:
    """The Site object of the contract; a reader who is not a member (public or private link) does not see who
    created the site or which organization holds it."""
    data = {
        "id": site.id,
        "siteId": site.site_id,
        "name": site.name,
        "domain": site.domain,
        "createdAt": iso_utc(site.created_at),
        "updatedAt": iso_utc(site.updated_at),
        "createdBy": site.created_by,
        "organizationId": site.organization_id,
        "isOwner": is_owner,
        **{api: bool(getattr(site, column)) for api, column in BOOLEAN_CONFIG_FIELDS.items()},
    }
    if not member:
        del data["createdBy"], data["organizationId"]
    return data


def site_config_json(site: Site) -> dict[str, Any]:
    """The full site configuration (never a key)."""
    config: dict[str, Any] = {api: bool(getattr(site, column)) for api, column in BOOLEAN_CONFIG_FIELDS.items()}
    config["excludedIPs"] = list(site.excluded_ips or [])
    config["excludedCountries"] = list(site.excluded_countries or [])
    return config


def is_site_key(value: str) -> bool:
    """True when ``value`` has the shape of a siteId or a string site id."""
    return _SITE_KEY.fullmatch(value) is not None


def check_site_key(value: str, field: str = "site_id") -> str:
    """``value`` when it has the shape of a site key, else 400 naming ``field``."""
    if not is_site_key(value):
        raise InvalidRequestError.for_field(field, SITE_KEY_MESSAGE)
    return value


def normalize_domain(raw: Any) -> str:
    """Strip scheme and trailing slashes, lower-case, and check it is a bare hostname."""
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidRequestError.for_field("domain", "is required and must be a hostname such as example.com")
    domain = re.sub(r"^[a-z][a-z0-9+.-]*://", "", raw.strip().lower()).rstrip("/")
    if len(domain) > 253 or not _DOMAIN.match(domain):
        raise InvalidRequestError.for_field(
            "domain", "must be a valid domain like example.com or sub.example.com (no scheme, port or path)"
        )
    return domain


def _require_object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidRequestError.for_field("body", "must be a JSON object")
    return body


def validate_site_create(body: Any) -> dict[str, Any]:
    """Validate ``{domain, name?, public?, saltUserIds?, blockBots?}``; return ``create_site`` arguments."""
    body = _require_object(body)
    allowed = {"domain", "name", "public", "saltUserIds", "blockBots"}
    errors = [FieldError(key, "is not a known field") for key in body if key not in allowed]
    domain = None
    try:
        domain = normalize_domain(body.get("domain"))
    except InvalidRequestError as exc:
        errors.extend(exc.details)
    name = body.get("name")
    if name is not None and (not isinstance(name, str) or not 1 <= len(name.strip()) <= 255):
        errors.append(FieldError("name", "must be a string of 1 to 255 characters"))
    flags = {}
    for key in ("public", "saltUserIds", "blockBots"):
        if key in body:
            if not isinstance(body[key], bool):
                errors.append(FieldError(key, "must be true or false"))
            else:
                flags[BOOLEAN_CONFIG_FIELDS[key]] = body[key]
    if errors:
        raise InvalidRequestError(f"{errors[0].field}: {errors[0].message}", errors)
    return {"domain": domain, "name": (name or domain or "").strip(), **flags}


def validate_config_update(body: Any) -> dict[str, Any]:
    """Validate a configuration update (any subset of ``CONFIG_FIELDS``); return column values to set.

    Every problem is collected so the caller sees all bad fields at once; nothing is applied on error.
    """
    body = _require_object(body)
    errors: list[FieldError] = []
    values: dict[str, Any] = {}
    for key, value in body.items():
        column = CONFIG_FIELDS.get(key)
        if column is None:
            errors.append(FieldError(key, "is not a known configuration field"))
        elif key in BOOLEAN_CONFIG_FIELDS:
            if isinstance(value, bool):
                values[column] = value
            else:
                errors.append(FieldError(key, "must be true or false"))
        elif not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            errors.append(FieldError(key, "must be an array of strings"))
        elif key == "excludedIPs":
            if len(value) > MAX_EXCLUDED_IPS:
                errors.append(FieldError(key, f"may hold at most {MAX_EXCLUDED_IPS} entries"))
                continue
            cleaned = []
            for index, item in enumerate(value):
                try:
                    parse_ip_pattern(item)
                except IPPatternError as exc:
                    errors.append(
                        FieldError(f"excludedIPs.{index}", f"{exc}; use an IP address, a CIDR block or an a-b range")
                    )
                else:
                    cleaned.append(item.strip())
            values[column] = list(dict.fromkeys(cleaned))
        else:
            if len(value) > MAX_EXCLUDED_COUNTRIES:
                errors.append(FieldError(key, f"may hold at most {MAX_EXCLUDED_COUNTRIES} entries"))
                continue
            codes = []
            for index, item in enumerate(value):
                code = item.strip()
                code = code.upper() if code.isascii() else code  # "ß".upper() would be SS (South Sudan)
                if is_country_code(code):
                    codes.append(code)
                else:
                    errors.append(
                        FieldError(f"excludedCountries.{index}", f"{item!r} names no country ({COUNTRY_CODE_HINT})")
                    )
            values[column] = list(dict.fromkeys(codes))
    if errors:
        raise InvalidRequestError(f"{errors[0].field}: {errors[0].message}", errors)
    if not values:
        raise InvalidRequestError.for_field("body", "names no configuration field to update")
    return values
