"""Countries and regions as people read and type them: names and flags for codes, codes for names.

Names come from ``pycountry`` (ISO 3166-1 and 3166-2), preferring the common name (``South Korea`` over ``Korea,
Republic of``); flags are the two regional indicator symbols of the code, which browsers draw as the flag. Events
hold codes (``DE``, ``US-CA``) and the URL keeps them; this module is only about showing and typing them.

``find_country`` accepts, in any case and with or without accents: a 2- or 3-letter code, the common, short or
official name, or the start of one name that only one country has (``Russia`` for the Russian Federation).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

import pycountry

__all__ = [
    "CountryLookup",
    "country_flag",
    "country_label",
    "country_name",
    "find_country",
    "is_country_code",
    "parse_countries",
    "region_label",
    "region_name",
]

# A code outside ISO 3166-1's assigned list that GeoIP databases report (the API accepts it too).
_EXTRA_NAMES = {"XK": "Kosovo"}
_PREFIX_MIN = 4  # shorter starts ("Ger", "Uni") match too much to mean one country
_MAX_CANDIDATES = 5
_MAX_PARTS = 3  # the most comma-separated parts one name has, with room to spare
_REGIONAL_A = 0x1F1E6
_CODE_IN_PARENS = re.compile(r"^(?P<name>.*?)\s*\((?P<code>[A-Za-z]{2})\)$")


def _fold(text: str) -> str:
    """Lower case without accents, flags or extra spaces: how names are compared."""
    text = "".join(ch for ch in text if not _REGIONAL_A <= ord(ch) <= _REGIONAL_A + 25)
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(plain.casefold().replace("’", "'").split())


@functools.cache
def _names() -> dict[str, str]:
    """Code -> the name to show."""
    names = {c.alpha_2: getattr(c, "common_name", None) or c.name for c in pycountry.countries}
    return {**names, **_EXTRA_NAMES}


@functools.cache
def _codes() -> dict[str, str]:
    """Upper-case alpha-2 or alpha-3 code -> alpha-2 code."""
    codes = {c.alpha_3: c.alpha_2 for c in pycountry.countries}
    return {**codes, **{code: code for code in _names()}}


@functools.cache
def _index() -> tuple[dict[str, str], tuple[tuple[str, str], ...]]:
    """(folded name -> code, every (folded name, code) pair for matching the start of a name)."""
    exact: dict[str, str] = {}
    names: list[tuple[str, str]] = []
    for c in pycountry.countries:
        for attr in ("common_name", "name", "official_name"):
            value = getattr(c, attr, None)
            if value:
                exact[_fold(value)] = c.alpha_2
                names.append((_fold(value), c.alpha_2))
    for code, name in _EXTRA_NAMES.items():
        exact[_fold(name)] = code
        names.append((_fold(name), code))
    return exact, tuple(names)


def is_country_code(code: str) -> bool:
    """True for an upper-case code a country has (the assigned ISO 3166-1 codes and ``XK``), as the API checks."""
    return code in _names()


def country_name(code: object) -> str:
    """``"DE"`` -> ``"Germany"``; a code no country has stays as it is, and no code gives ``""``."""
    text = str(code or "").strip()
    return _names().get(text.upper(), text)


def country_flag(code: object) -> str:
    """The flag emoji of a known country code (two regional indicator symbols), else ``""``."""
    text = str(code or "").strip().upper()
    if text not in _names():
        return ""
    return "".join(chr(_REGIONAL_A + ord(letter) - ord("A")) for letter in text)


def country_label(code: object, *, with_code: bool = False) -> str:
    """``"🇩🇪 Germany"`` (``"🇩🇪 Germany (DE)"`` with the code); an unknown code as it is; no code ``""``."""
    text = str(code or "").strip()
    if not text:
        return ""
    name = country_name(text)
    if name == text:
        return text
    label = f"{country_flag(text)} {name}"
    return f"{label} ({text.upper()})" if with_code else label


def region_name(code: object) -> str:
    """``"US-CA"`` -> ``"California"``; a code ISO 3166-2 does not list stays as it is."""
    text = str(code or "").strip()
    found = pycountry.subdivisions.get(code=text.upper()) if "-" in text else None
    return found.name if found is not None else text


def region_label(code: object) -> str:
    """``"US-CA"`` -> ``"🇺🇸 California, United States"``; unknown codes as they are; no code ``""``."""
    text = str(code or "").strip()
    name = region_name(text)
    if not text or name == text:
        return text
    country = text.split("-", 1)[0]
    return f"{country_flag(country)} {name}, {country_name(country)}"


@dataclass(frozen=True)
class CountryLookup:
    """What a typed value names: ``code`` when it names one country, else the ``candidates`` it could mean."""

    text: str
    code: str | None
    candidates: tuple[str, ...] = ()

    @property
    def problem(self) -> str | None:
        """A sentence for the person who typed ``text``, or ``None`` when it names one country."""
        if self.code is not None:
            return None
        if self.candidates:
            options = ", ".join(country_label(code, with_code=True) for code in self.candidates[:_MAX_CANDIDATES])
            more = ", …" if len(self.candidates) > _MAX_CANDIDATES else ""
            return f"“{self.text}” could be {options}{more}: type the one you mean."
        return f"No country is called “{self.text}”: type a name such as Germany or a code such as DE."


def find_country(text: str) -> CountryLookup:
    """The country ``text`` names (see the module docstring), or why it names none."""
    wanted = text.strip()
    parens = _CODE_IN_PARENS.match(wanted)  # "Germany (DE)", as labels show it
    if parens and parens.group("code").upper() in _names():
        return CountryLookup(text, parens.group("code").upper())
    # Codes are ASCII letters: "ß" folds to "ss" but is no code for South Sudan.
    if wanted.isascii() and wanted.upper() in _codes():
        return CountryLookup(text, _codes()[wanted.upper()])
    folded = _fold(wanted)
    exact, names = _index()
    if folded in exact:
        return CountryLookup(text, exact[folded])
    if len(folded) >= _PREFIX_MIN:
        starts = tuple(sorted({code for name, code in names if name.startswith(folded)}))
        if len(starts) == 1:
            return CountryLookup(text, starts[0])
        if starts:
            return CountryLookup(text, None, starts)
    return CountryLookup(text, None)


def parse_countries(raw: str | None) -> tuple[list[str], list[CountryLookup]]:
    """Comma-separated countries as typed -> (their codes, the lookups that named no country).

    Some names hold a comma (``Korea, Republic of``), so the longest run of parts that names a country wins.
    """
    parts = [part.strip() for part in (raw or "").split(",")]
    codes: list[str] = []
    problems: list[CountryLookup] = []
    start = 0
    while start < len(parts):
        if not parts[start]:
            start += 1
            continue
        for end in range(min(len(parts), start + _MAX_PARTS), start, -1):
            lookup = find_country(", ".join(parts[start:end]))
            if lookup.code is not None or end == start + 1:
                break
        if lookup.code is not None:
            codes.append(lookup.code)
        else:
            problems.append(lookup)
        start = end
    return list(dict.fromkeys(codes)), problems
