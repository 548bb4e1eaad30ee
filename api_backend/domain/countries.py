"""Which two-letter codes name a country: the assigned ISO 3166-1 alpha-2 codes (from ``pycountry``) and ``XK``.

``XK`` is user-assigned in ISO 3166-1, but GeoIP databases (MaxMind's among them) report Kosovo with it, so events
carry it and filters and site settings must accept it. Every other user-assigned code (``AA``, ``QM``-``QZ``,
``XA``-``XZ``, ``ZZ``) and every unassigned one names no country: a filter or an excluded-countries list holding
one could never match an event, so the API refuses it instead of silently selecting nothing.
"""

from __future__ import annotations

import functools

import pycountry

__all__ = ["COUNTRY_CODE_HINT", "country_codes", "is_country_code"]

# Codes outside ISO 3166-1's assigned list that real geolocation data uses.
_GEOIP_CODES = frozenset({"XK"})
COUNTRY_CODE_HINT = "use an assigned ISO 3166-1 alpha-2 code such as DE or US"


@functools.cache
def country_codes() -> frozenset[str]:
    """Every code an event's ``country`` can hold (upper-case)."""
    return frozenset(country.alpha_2 for country in pycountry.countries) | _GEOIP_CODES


def is_country_code(code: str) -> bool:
    """True when ``code`` (exactly as given: upper-case) names a country."""
    return code in country_codes()
