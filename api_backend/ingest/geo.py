"""Country (and region and city when the database has them) from an IP address.

Two sources, chosen by ``settings.geoip_mmdb``:

- ``MaxMindLocator``: a MaxMind ``.mmdb`` file (GeoLite2/GeoIP2 Country or City, or any file with the same
  record layout) read with ``maxminddb``. Region is ``"<country>-<first subdivision code>"`` as the peer stores it.
- ``BundledLocator`` (the default): the GeoLite2 country data shipped inside the ``geoip2fast`` package. It
  loads the IPv6 data file (which also holds the IPv4 ranges) and falls back to the IPv4-only file.

Results are cached per address; private and unknown addresses give empty strings.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Protocol

__all__ = ["BundledLocator", "GeoLocation", "GeoLocator", "MaxMindLocator", "open_locator"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class GeoLocation:
    """Where an address is: ISO country code, ``CC-SUB`` region and English city name (``""`` when unknown)."""

    country: str = ""
    region: str = ""
    city: str = ""


UNKNOWN = GeoLocation()


class GeoLocator(Protocol):
    """Anything that can place an IP address."""

    def locate(self, ip: str) -> GeoLocation:
        """The location of ``ip`` (``UNKNOWN`` for private, invalid or unlisted addresses)."""
        ...

    def close(self) -> None:
        """Release the database."""
        ...


def _public_address(ip: str) -> str | None:
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    if not address.is_global:
        return None
    return str(address)


@cache
def _bundled_database() -> Any:
    """The bundled database, loaded once per process: lookups only read it, and loading it takes about a fifth of
    a second (a process that opens sitelens more than once, such as the test suite, pays that once)."""
    import geoip2fast
    from geoip2fast import GeoIP2Fast

    v6 = Path(geoip2fast.__file__).parent / "geoip2fast-ipv6.dat.gz"
    try:
        return GeoIP2Fast(geoip2fast_data_file=str(v6)) if v6.exists() else GeoIP2Fast()
    except Exception:  # a damaged v6 file must not stop ingestion: the v4 file still covers most traffic
        log.warning("geoip2fast IPv6 data did not load; using the IPv4-only data", exc_info=True)
        return GeoIP2Fast()


class BundledLocator:
    """Country lookups from the offline database shipped with ``geoip2fast``."""

    def __init__(self) -> None:
        self._db = _bundled_database()
        self.locate = lru_cache(maxsize=65536)(self._locate)

    def _locate(self, ip: str) -> GeoLocation:
        address = _public_address(ip)
        if address is None:
            return UNKNOWN
        code = getattr(self._db.lookup(address), "country_code", "") or ""
        # geoip2fast answers "--" (and a few other placeholders) for addresses it does not know.
        return GeoLocation(country=code.upper()) if len(code) == 2 and code.isalpha() else UNKNOWN

    def close(self) -> None:
        """Nothing to release (the data lives in memory)."""


class MaxMindLocator:
    """Lookups in a MaxMind-format ``.mmdb`` file (country or city databases)."""

    def __init__(self, path: str | Path) -> None:
        import maxminddb

        self._reader = maxminddb.open_database(str(path))
        self.locate = lru_cache(maxsize=65536)(self._locate)

    def _locate(self, ip: str) -> GeoLocation:
        address = _public_address(ip)
        if address is None:
            return UNKNOWN
        try:
            record: Any = self._reader.get(address)
        except ValueError:  # an IPv6 address against an IPv4-only database
            return UNKNOWN
        if not isinstance(record, dict):
            return UNKNOWN
        country = str((record.get("country") or record.get("registered_country") or {}).get("iso_code") or "").upper()
        subdivisions = record.get("subdivisions") or []
        sub = str(subdivisions[0].get("iso_code") or "") if subdivisions and isinstance(subdivisions[0], dict) else ""
        city = str(((record.get("city") or {}).get("names") or {}).get("en") or "")
        return GeoLocation(country=country, region=f"{country}-{sub}" if country and sub else "", city=city)

    def close(self) -> None:
        """Close the database file."""
        self._reader.close()


def open_locator(mmdb_path: str = "") -> GeoLocator:
    """The MaxMind file at ``mmdb_path`` when given, else the bundled country database."""
    return MaxMindLocator(mmdb_path) if mmdb_path else BundledLocator()
