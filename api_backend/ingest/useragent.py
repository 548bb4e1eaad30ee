"""User-agent parsing: browser and major version, operating system and version, device type.

Parsing uses ``ua-parser`` 1.x (with its Rust matcher when ``ua-parser[regex]`` is installed) behind an LRU
cache, because real traffic repeats a small set of user agents. The device type is decided by
``device_type`` from the parsed device and OS, with the screen size as the last resort.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ua_parser import parse

__all__ = ["UserAgentInfo", "device_type", "parse_user_agent"]

DESKTOP, MOBILE, TABLET, TV, CONSOLE, WEARABLE, BOT = "Desktop", "Mobile", "Tablet", "TV", "Console", "Wearable", "Bot"

_DESKTOP_OS = frozenset(
    {
        "Windows",
        "Mac OS X",
        "macOS",
        "Linux",
        "Ubuntu",
        "Debian",
        "Fedora",
        "Red Hat",
        "SUSE",
        "openSUSE",
        "Mint",
        "Arch Linux",
        "Gentoo",
        "Slackware",
        "Mandriva",
        "CentOS",
        "Chrome OS",
        "ChromeOS",
        "FreeBSD",
        "OpenBSD",
        "NetBSD",
        "Solaris",
        "SunOS",
        "BeOS",
        "Haiku",
        "Fuchsia",
    }
)
_MOBILE_OS = frozenset(
    {
        "iOS",
        "Android",
        "Windows Phone",
        "Windows Mobile",
        "Windows CE",
        "BlackBerry OS",
        "BlackBerry Tablet OS",
        "Symbian OS",
        "Symbian^3",
        "KaiOS",
        "Tizen",
        "HarmonyOS",
        "Firefox OS",
        "Sailfish",
        "webOS",
        "Bada",
    }
)
_TABLET_WORDS = ("ipad", "tablet", "kindle", "silk", "playbook", "nexus 7", "nexus 9", "nexus 10", "sm-t", "sm-x")
_TV_WORDS = (
    "smart-tv",
    "smarttv",
    "smart tv",
    "googletv",
    "google tv",
    "appletv",
    "apple tv",
    "hbbtv",
    "netcast",
    "roku",
    "chromecast",
    "bravia",
    "crkey",
    "webos.tv",
    " tv ",
    "tv safari",
)
_CONSOLE_WORDS = ("playstation", "xbox", "nintendo")
_WEARABLE_WORDS = ("watch",)


@dataclass(frozen=True, slots=True)
class UserAgentInfo:
    """What a user agent says about the visitor's software (``device`` is ``""`` when the UA does not tell)."""

    browser: str
    browser_version: str
    operating_system: str
    operating_system_version: str
    device: str


def _version(*parts: str | None) -> str:
    out = []
    for part in parts:
        if not part:
            break
        out.append(part)
    return ".".join(out)


@lru_cache(maxsize=16384)
def parse_user_agent(user_agent: str) -> UserAgentInfo:
    """Parse one user agent (cached)."""
    if not user_agent:
        return UserAgentInfo("", "", "", "", "")
    result = parse(user_agent)
    ua, os, device = result.user_agent, result.os, result.device
    browser = ua.family if ua and ua.family != "Other" else ""
    os_name = os.family if os and os.family != "Other" else ""
    return UserAgentInfo(
        browser=browser,
        browser_version=(ua.major or "") if ua and browser else "",
        operating_system=os_name,
        operating_system_version=_version(os.major, os.minor, os.patch) if os and os_name else "",
        device=_device_from(
            user_agent.lower(), os_name, device.family if device else "", device.brand or "" if device else ""
        ),
    )


def _device_from(lowered: str, os_name: str, family: str, brand: str) -> str:
    """The device class the user agent itself reveals, or ``""``."""
    family_l = family.lower()
    if brand == "Spider" or family == "Spider":
        return BOT
    if any(w in lowered for w in _CONSOLE_WORDS):
        return CONSOLE
    if any(w in lowered for w in _TV_WORDS) or "tv" in family_l.split():
        return TV
    if "watch" in family_l or os_name in ("watchOS", "Wear OS"):
        return WEARABLE
    if family == "iPad" or "tablet" in brand.lower() or any(w in lowered for w in _TABLET_WORDS):
        return TABLET
    if os_name == "Android":
        # Android phones say "Mobile"; Android tablets leave it out.
        return MOBILE if "mobile" in lowered else TABLET
    if os_name in _MOBILE_OS or family in ("iPhone", "iPod"):
        return MOBILE
    if os_name in _DESKTOP_OS or os_name.startswith(("Windows", "Mac", "Linux")):
        return DESKTOP
    return ""


def device_type(info: UserAgentInfo, screen_width: int = 0, screen_height: int = 0) -> str:
    """The stored ``device_type``: from the user agent, else from the screen size, else ``""`` (unknown).

    The screen rule: the shorter side >= 600 px and longer side < 1280 reads as a tablet, a longer side >= 1024
    as a desktop, anything smaller as a phone.
    """
    if info.device:
        return info.device
    if screen_width <= 0 or screen_height <= 0:
        return ""
    short, long = sorted((screen_width, screen_height))
    if short >= 600 and long < 1280:
        return TABLET
    if long >= 1024:
        return DESKTOP
    return MOBILE
