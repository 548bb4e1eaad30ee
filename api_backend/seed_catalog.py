"""The fixed vocabulary of synthetic traffic: site map, arrivals (channel, referrer, UTM), devices, places, errors.

``api_backend.seed`` draws from these tables with numpy; nothing here is random. Channel values are what the
ingestion classifier stores for such a referrer and UTM set (peer-read §4.1 with label-boundary domain matching),
and the empty string is the direct channel.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = [
    "ARRIVALS",
    "BUTTONS",
    "CATEGORIES",
    "CHANNEL_BEHAVIOUR",
    "COPIES",
    "CUSTOM_EVENTS",
    "DEVICES",
    "ENTRY_WEIGHTS",
    "ERROR_CATALOG",
    "FORMS",
    "FORM_BY_CATEGORY",
    "INPUTS",
    "NEWSLETTERS",
    "OUTBOUND_LINKS",
    "PLACES",
    "PURCHASES",
    "SIGNUPS",
    "TRANSITIONS",
    "Arrival",
    "ChannelBehaviour",
    "Device",
    "ErrorSpec",
    "Place",
    "error_props",
    "site_map",
]

# Page categories: the Markov walk of a session moves between these, then picks a page inside one.
CATEGORIES: tuple[str, ...] = (
    "home",
    "features",
    "pricing",
    "blog",
    "docs",
    "signup",
    "login",
    "checkout",
    "account",
    "about",
)

BLOG_POSTS: tuple[str, ...] = (
    "privacy-first-analytics",
    "migrating-from-google-analytics",
    "core-web-vitals-explained",
    "utm-parameters-guide",
    "self-hosting-analytics-with-duckdb",
    "funnel-analysis-101",
    "bounce-rate-myths",
    "server-side-tracking",
    "ai-referrals-chatgpt-traffic",
    "javascript-error-tracking",
    "cookie-banners-are-optional",
    "goal-conversion-rates",
    "gdpr-analytics-checklist",
    "single-page-app-analytics",
    "session-definition-30-minutes",
    "channel-attribution-explained",
    "dashboards-people-read",
    "measuring-seo-traffic",
    "launch-week-recap",
    "ab-testing-without-cookies",
    "event-tracking-naming-conventions",
    "what-is-a-unique-visitor",
    "analytics-for-open-source-projects",
    "realtime-dashboards-on-one-machine",
)

DOCS: dict[str, tuple[str, ...]] = {
    "getting-started": ("installation", "quick-start", "configuration", "tracking-script"),
    "tracking": ("pageviews", "custom-events", "web-vitals", "errors", "outbound-links", "forms"),
    "api": ("authentication", "goals", "sessions", "errors", "overview", "funnels"),
    "sdk": ("python", "node", "javascript"),
    "self-hosting": ("docker", "reverse-proxy", "backups", "upgrading"),
}


def _title(slug: str) -> str:
    return slug.replace("-", " ").capitalize()


def site_map(brand: str) -> list[tuple[str, str, str, float]]:
    """Every page: ``(pathname, page title, category, weight inside its category)``.

    Weights fall off with position (a few popular pages, a long tail). ``/checkout/success`` has weight 0:
    only purchase sessions reach it.
    """
    pages: list[tuple[str, str, str, float]] = [
        ("/", f"{brand} - Web analytics you can trust", "home", 1.0),
        ("/features", f"Features | {brand}", "features", 1.0),
        ("/features/goals", f"Goals and conversions | {brand}", "features", 0.5),
        ("/features/funnels", f"Funnels | {brand}", "features", 0.4),
        ("/features/errors", f"Error tracking | {brand}", "features", 0.3),
        ("/integrations", f"Integrations | {brand}", "features", 0.35),
        ("/pricing", f"Pricing | {brand}", "pricing", 1.0),
        ("/blog", f"Blog | {brand}", "blog", 0.9),
        ("/signup", f"Create your account | {brand}", "signup", 1.0),
        ("/login", f"Sign in | {brand}", "login", 1.0),
        ("/checkout", f"Checkout | {brand}", "checkout", 1.0),
        ("/checkout/success", f"Thank you | {brand}", "checkout", 0.0),
        ("/account", f"Your account | {brand}", "account", 1.0),
        ("/account/settings", f"Settings | {brand}", "account", 0.5),
        ("/account/billing", f"Billing | {brand}", "account", 0.3),
        ("/account/api-keys", f"API keys | {brand}", "account", 0.25),
        ("/about", f"About us | {brand}", "about", 1.0),
        ("/contact", f"Contact | {brand}", "about", 0.6),
        ("/changelog", f"Changelog | {brand}", "about", 0.5),
        ("/careers", f"Careers | {brand}", "about", 0.25),
        ("/privacy", f"Privacy policy | {brand}", "about", 0.2),
    ]
    for rank, slug in enumerate(BLOG_POSTS):
        pages.append((f"/blog/{slug}", f"{_title(slug)} | {brand} blog", "blog", 1.0 / (rank + 1) ** 0.9))
    rank = 0
    pages.append(("/docs", f"Documentation | {brand}", "docs", 1.0))
    for section, names in DOCS.items():
        for name in names:
            rank += 1
            title = f"{_title(name)} - {_title(section)} | {brand} docs"
            pages.append((f"/docs/{section}/{name}", title, "docs", 1.0 / rank**0.7))
    return pages


# Where a session lands, per arrival channel (weights over CATEGORIES).
_DEFAULT_ENTRY = {"home": 30, "features": 5, "pricing": 8, "blog": 28, "docs": 17, "signup": 3, "login": 5, "about": 2}
ENTRY_WEIGHTS: dict[str, dict[str, float]] = {
    "": {"home": 38, "login": 12, "account": 6, "docs": 14, "blog": 12, "pricing": 8, "features": 5, "about": 3},
    "Organic Search": {"blog": 45, "docs": 28, "home": 15, "pricing": 5, "features": 5, "about": 2},
    "Paid Search": {"home": 30, "pricing": 45, "features": 20, "signup": 5},
    "Organic Social": {"blog": 75, "home": 15, "features": 10},
    "Paid Social": {"home": 30, "features": 30, "pricing": 30, "signup": 10},
    "Email": {"blog": 60, "features": 20, "pricing": 10, "account": 10},
    "Referral": {"docs": 35, "blog": 25, "home": 30, "features": 10},
    "AI": {"docs": 40, "home": 25, "pricing": 20, "blog": 15},
    "Affiliate": {"pricing": 40, "home": 40, "features": 20},
    "Display": {"home": 60, "features": 25, "pricing": 15},
}

# Next page category given the current one.
TRANSITIONS: dict[str, dict[str, float]] = {
    "home": {"features": 20, "pricing": 20, "blog": 15, "docs": 15, "signup": 6, "login": 10, "about": 7, "home": 5},
    "features": {"pricing": 30, "features": 25, "signup": 8, "docs": 15, "home": 10, "blog": 10},
    "pricing": {"signup": 18, "features": 15, "docs": 15, "home": 17, "about": 10, "login": 10, "pricing": 5},
    "blog": {"blog": 45, "home": 15, "pricing": 10, "docs": 10, "features": 10, "signup": 4, "about": 6},
    "docs": {"docs": 70, "home": 5, "pricing": 5, "signup": 4, "login": 10, "blog": 6},
    "signup": {"account": 45, "home": 15, "pricing": 15, "docs": 25},
    "login": {"account": 70, "docs": 20, "home": 10},
    "checkout": {"account": 60, "pricing": 20, "home": 20},
    "account": {"account": 60, "docs": 20, "checkout": 3, "home": 17},
    "about": {"home": 35, "pricing": 20, "blog": 20, "features": 15, "about": 10},
}


@dataclass(frozen=True)
class Arrival:
    """How a session arrives: the channel the classifier derives, the referrer and the landing page's UTM keys."""

    channel: str
    weight: float
    referrer: str = ""
    utm_source: str = ""
    utm_medium: str = ""
    utm_campaign: str = ""
    utm_term: str = ""
    utm_content: str = ""

    @property
    def utm(self) -> dict[str, str]:
        """The non-empty UTM keys in URL order."""
        keys = ("utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content")
        return {key: getattr(self, key) for key in keys if getattr(self, key)}

    @property
    def querystring(self) -> str:
        """The landing page's raw query string (with its leading ``?``), as the tracker sends it."""
        utm = self.utm
        if not utm:
            return ""
        return "?" + "&".join(f"{key}={value.replace(' ', '+')}" for key, value in utm.items())

    @property
    def url_parameters(self) -> str:
        """Every query parameter of the landing page as JSON text."""
        return json.dumps(self.utm, separators=(",", ":"))


def _channel(channel: str, share: float, arrivals: list[tuple[float, dict[str, str]]]) -> list[Arrival]:
    total = sum(w for w, _ in arrivals)
    return [Arrival(channel=channel, weight=share * w / total, **fields) for w, fields in arrivals]


ARRIVALS: tuple[Arrival, ...] = tuple(
    _channel("", 28, [(1, {})])
    + _channel(
        "Organic Search",
        27,
        [
            (80, {"referrer": "https://www.google.com/"}),
            (8, {"referrer": "https://www.bing.com/"}),
            (6, {"referrer": "https://duckduckgo.com/"}),
            (2, {"referrer": "https://www.ecosia.org/"}),
            (2, {"referrer": "https://search.yahoo.com/"}),
            (2, {"referrer": "https://search.brave.com/"}),
        ],
    )
    + _channel(
        "Paid Search",
        7,
        [
            (
                30,
                {
                    "referrer": "https://www.google.com/",
                    "utm_source": "google",
                    "utm_medium": "cpc",
                    "utm_campaign": "brand-search",
                    "utm_term": "sitelens",
                    "utm_content": "ad-v1",
                },
            ),
            (
                25,
                {
                    "referrer": "https://www.google.com/",
                    "utm_source": "google",
                    "utm_medium": "cpc",
                    "utm_campaign": "analytics-generic",
                    "utm_term": "web analytics",
                    "utm_content": "ad-v2",
                },
            ),
            (
                25,
                {
                    "referrer": "https://www.google.com/",
                    "utm_source": "google",
                    "utm_medium": "cpc",
                    "utm_campaign": "ga-alternative",
                    "utm_term": "google analytics alternative",
                    "utm_content": "ad-v1",
                },
            ),
            (
                10,
                {
                    "referrer": "https://www.google.com/",
                    "utm_source": "google",
                    "utm_medium": "cpc",
                    "utm_campaign": "privacy-analytics",
                    "utm_term": "cookieless analytics",
                },
            ),
            (
                10,
                {
                    "referrer": "https://www.bing.com/",
                    "utm_source": "bing",
                    "utm_medium": "cpc",
                    "utm_campaign": "brand-search",
                    "utm_term": "sitelens",
                },
            ),
        ],
    )
    + _channel(
        "Organic Social",
        8,
        [
            (25, {"referrer": "https://news.ycombinator.com/"}),
            (20, {"referrer": "https://www.reddit.com/r/webdev/"}),
            (15, {"referrer": "https://t.co/"}),
            (15, {"referrer": "https://www.linkedin.com/"}),
            (5, {"referrer": "https://www.facebook.com/"}),
            (5, {"referrer": "https://mastodon.social/"}),
            (5, {"referrer": "https://bsky.app/"}),
            (
                10,
                {
                    "referrer": "https://t.co/",
                    "utm_source": "twitter",
                    "utm_medium": "social",
                    "utm_campaign": "launch-week",
                },
            ),
        ],
    )
    + _channel(
        "Paid Social",
        3,
        [
            (
                40,
                {
                    "referrer": "https://www.facebook.com/",
                    "utm_source": "facebook",
                    "utm_medium": "paid-social",
                    "utm_campaign": "spring-promo",
                    "utm_content": "carousel-a",
                },
            ),
            (
                20,
                {
                    "referrer": "https://www.facebook.com/",
                    "utm_source": "facebook",
                    "utm_medium": "paid-social",
                    "utm_campaign": "spring-promo",
                    "utm_content": "video-b",
                },
            ),
            (
                40,
                {
                    "referrer": "https://www.linkedin.com/",
                    "utm_source": "linkedin",
                    "utm_medium": "paid-social",
                    "utm_campaign": "b2b-retargeting",
                },
            ),
        ],
    )
    + _channel(
        "Email",
        5,
        [
            (
                45,
                {
                    "utm_source": "newsletter",
                    "utm_medium": "email",
                    "utm_campaign": "weekly-digest",
                    "utm_content": "top-story",
                },
            ),
            (
                15,
                {
                    "utm_source": "newsletter",
                    "utm_medium": "email",
                    "utm_campaign": "weekly-digest",
                    "utm_content": "footer",
                },
            ),
            (25, {"utm_source": "newsletter", "utm_medium": "email", "utm_campaign": "product-update"}),
            (15, {"utm_source": "onboarding", "utm_medium": "email", "utm_campaign": "onboarding-day-3"}),
        ],
    )
    + _channel(
        "Referral",
        10,
        [
            (30, {"referrer": "https://github.com/sitelens/sitelens"}),
            (15, {"referrer": "https://dev.to/analytics/self-hosted-web-analytics-compared"}),
            (15, {"referrer": "https://stackoverflow.com/questions/7834215/track-pageviews-without-cookies"}),
            (15, {"referrer": "https://www.producthunt.com/products/sitelens"}),
            (15, {"referrer": "https://alternativeto.net/software/google-analytics/"}),
            (10, {"referrer": "https://www.indiehackers.com/post/analytics-stack"}),
        ],
    )
    + _channel(
        "AI",
        5,
        [
            (50, {"referrer": "https://chatgpt.com/", "utm_source": "chatgpt.com"}),
            (20, {"referrer": "https://www.perplexity.ai/"}),
            (15, {"referrer": "https://claude.ai/"}),
            (10, {"referrer": "https://gemini.google.com/"}),
            (5, {"referrer": "https://copilot.microsoft.com/"}),
        ],
    )
    + _channel(
        "Affiliate",
        2,
        [
            (
                60,
                {
                    "referrer": "https://techreviewhub.com/best-privacy-analytics-tools",
                    "utm_source": "techreviewhub",
                    "utm_medium": "affiliate",
                    "utm_campaign": "partner-program",
                },
            ),
            (
                40,
                {
                    "referrer": "https://www.saasworthy.com/list/web-analytics-software",
                    "utm_source": "saasworthy",
                    "utm_medium": "affiliate",
                    "utm_campaign": "partner-program",
                },
            ),
        ],
    )
    + _channel(
        "Display",
        2,
        [
            (60, {"utm_source": "adroll", "utm_medium": "display", "utm_campaign": "retargeting-q4"}),
            (
                40,
                {
                    "referrer": "https://carbonads.net/",
                    "utm_source": "carbonads",
                    "utm_medium": "banner",
                    "utm_campaign": "dev-audience",
                },
            ),
        ],
    )
)


@dataclass(frozen=True)
class ChannelBehaviour:
    """How sessions of one channel behave: bounce probability and conversion propensities."""

    bounce: float
    signup: float
    purchase_given_signup: float
    newsletter: float


CHANNEL_BEHAVIOUR: dict[str, ChannelBehaviour] = {
    "": ChannelBehaviour(bounce=0.35, signup=0.035, purchase_given_signup=0.40, newsletter=0.015),
    "Organic Search": ChannelBehaviour(bounce=0.45, signup=0.030, purchase_given_signup=0.35, newsletter=0.020),
    "Paid Search": ChannelBehaviour(bounce=0.40, signup=0.080, purchase_given_signup=0.50, newsletter=0.010),
    "Organic Social": ChannelBehaviour(bounce=0.60, signup=0.012, purchase_given_signup=0.25, newsletter=0.030),
    "Paid Social": ChannelBehaviour(bounce=0.55, signup=0.020, purchase_given_signup=0.30, newsletter=0.015),
    "Email": ChannelBehaviour(bounce=0.30, signup=0.060, purchase_given_signup=0.50, newsletter=0.010),
    "Referral": ChannelBehaviour(bounce=0.35, signup=0.040, purchase_given_signup=0.40, newsletter=0.020),
    "AI": ChannelBehaviour(bounce=0.30, signup=0.070, purchase_given_signup=0.45, newsletter=0.015),
    "Affiliate": ChannelBehaviour(bounce=0.40, signup=0.060, purchase_given_signup=0.45, newsletter=0.010),
    "Display": ChannelBehaviour(bounce=0.75, signup=0.008, purchase_given_signup=0.20, newsletter=0.005),
}


@dataclass(frozen=True)
class Device:
    """A browser on an operating system on a kind of device, as ua-parser names them."""

    browser: str
    browser_versions: tuple[str, ...]
    os: str
    os_versions: tuple[str, ...]
    device_type: str
    screens: tuple[tuple[int, int], ...]
    weight: float


_WINDOWS_SCREENS = ((1920, 1080), (1366, 768), (1536, 864), (2560, 1440), (1280, 720))
_MAC_SCREENS = ((1440, 900), (1512, 982), (1728, 1117), (1920, 1080), (2560, 1440))
_LINUX_SCREENS = ((1920, 1080), (2560, 1440), (1366, 768))
_IPHONE_SCREENS = ((390, 844), (393, 852), (430, 932), (375, 812), (414, 896))
_ANDROID_SCREENS = ((412, 915), (360, 800), (384, 854), (393, 873), (412, 892))
_TABLET_SCREENS = ((820, 1180), (768, 1024), (1024, 1366), (800, 1280))
_CHROME = ("131", "130", "129", "128")

DEVICES: tuple[Device, ...] = (
    Device("Chrome", _CHROME, "Windows", ("10",), "Desktop", _WINDOWS_SCREENS, 24),
    Device("Chrome", _CHROME, "Mac OS X", ("10.15.7",), "Desktop", _MAC_SCREENS, 12),
    Device("Safari", ("18", "17"), "Mac OS X", ("10.15.7",), "Desktop", _MAC_SCREENS, 6),
    Device("Edge", ("131", "130"), "Windows", ("10",), "Desktop", _WINDOWS_SCREENS, 7),
    Device("Firefox", ("133", "132", "128"), "Windows", ("10",), "Desktop", _WINDOWS_SCREENS, 5),
    Device("Firefox", ("133", "132"), "Linux", ("",), "Desktop", _LINUX_SCREENS, 2),
    Device("Chrome", _CHROME, "Linux", ("",), "Desktop", _LINUX_SCREENS, 2),
    Device("Opera", ("114", "113"), "Windows", ("10",), "Desktop", _WINDOWS_SCREENS, 1),
    Device("Mobile Safari", ("18", "17"), "iOS", ("18.1", "18.0", "17.6", "17.5"), "Mobile", _IPHONE_SCREENS, 16),
    Device("Chrome Mobile", ("131", "130"), "Android", ("14", "13", "12"), "Mobile", _ANDROID_SCREENS, 12),
    Device("Samsung Internet", ("26", "25"), "Android", ("14", "13"), "Mobile", ((360, 780), (384, 832)), 3),
    Device("Chrome Mobile iOS", ("131",), "iOS", ("18.1", "17.6"), "Mobile", _IPHONE_SCREENS, 2),
    Device("Mobile Safari", ("18", "17"), "iOS", ("18.1", "17.6"), "Tablet", _TABLET_SCREENS[:3], 2.5),
    Device("Chrome", _CHROME[:2], "Android", ("14", "13"), "Tablet", _TABLET_SCREENS[3:], 1),
)


@dataclass(frozen=True)
class Place:
    """Where a visitor is: ISO country, ``CC-code`` region, city, usual browser language and a weight."""

    country: str
    region: str
    city: str
    language: str
    weight: float


PLACES: tuple[Place, ...] = (
    Place("US", "US-CA", "San Francisco", "en-US", 7),
    Place("US", "US-CA", "Los Angeles", "en-US", 4),
    Place("US", "US-NY", "New York", "en-US", 7),
    Place("US", "US-TX", "Austin", "en-US", 3),
    Place("US", "US-WA", "Seattle", "en-US", 3),
    Place("US", "US-IL", "Chicago", "en-US", 3),
    Place("US", "US-MA", "Boston", "en-US", 2),
    Place("US", "US-FL", "Miami", "en-US", 2),
    Place("US", "", "", "en-US", 1),
    Place("GB", "GB-ENG", "London", "en-GB", 6),
    Place("GB", "GB-ENG", "Manchester", "en-GB", 1.5),
    Place("GB", "GB-SCT", "Edinburgh", "en-GB", 1),
    Place("DE", "DE-BE", "Berlin", "de-DE", 4),
    Place("DE", "DE-BY", "Munich", "de-DE", 3),
    Place("DE", "DE-HH", "Hamburg", "de-DE", 2),
    Place("FR", "FR-IDF", "Paris", "fr-FR", 3.5),
    Place("FR", "FR-ARA", "Lyon", "fr-FR", 1.5),
    Place("NL", "NL-NH", "Amsterdam", "nl-NL", 3),
    Place("CA", "CA-ON", "Toronto", "en-CA", 2.5),
    Place("CA", "CA-BC", "Vancouver", "en-CA", 1.5),
    Place("CA", "CA-QC", "Montreal", "fr-CA", 1),
    Place("IN", "IN-KA", "Bengaluru", "en-IN", 4),
    Place("IN", "IN-MH", "Mumbai", "en-IN", 2.5),
    Place("IN", "IN-DL", "Delhi", "en-IN", 1.5),
    Place("BR", "BR-SP", "Sao Paulo", "pt-BR", 4),
    Place("JP", "JP-13", "Tokyo", "ja-JP", 3),
    Place("AU", "AU-NSW", "Sydney", "en-AU", 2),
    Place("AU", "AU-VIC", "Melbourne", "en-AU", 1),
    Place("ES", "ES-MD", "Madrid", "es-ES", 2),
    Place("ES", "ES-CT", "Barcelona", "es-ES", 1),
    Place("SE", "SE-AB", "Stockholm", "sv-SE", 2),
    Place("PL", "PL-MZ", "Warsaw", "pl-PL", 2),
    Place("IT", "IT-25", "Milan", "it-IT", 2),
    Place("SG", "", "Singapore", "en-SG", 2),
    Place("", "", "", "en-US", 1),
)


@dataclass(frozen=True)
class ErrorSpec:
    """A recurring JavaScript error: class, message, the functions on its stack and the bundle it comes from."""

    name: str
    message: str
    frames: tuple[str, ...]
    bundle: str


ERROR_CATALOG: tuple[ErrorSpec, ...] = (
    ErrorSpec(
        "TypeError",
        "Cannot read properties of undefined (reading 'map')",
        ("renderPlanList", "PricingTable", "renderWithHooks", "mountIndeterminateComponent"),
        "pricing.51c0aa.js",
    ),
    ErrorSpec(
        "ReferenceError",
        "gtag is not defined",
        ("trackConversion", "onSubmit", "HTMLFormElement.handle"),
        "app.3f9a1c.js",
    ),
    ErrorSpec("TypeError", "Failed to fetch", ("fetchUsage", "loadDashboard", "async Promise.all"), "app.3f9a1c.js"),
    ErrorSpec(
        "TypeError",
        "undefined is not an object (evaluating 'window.analytics.track')",
        ("trackClick", "HTMLButtonElement.onclick"),
        "app.3f9a1c.js",
    ),
    ErrorSpec(
        "SyntaxError",
        "Unexpected token '<', \"<!DOCTYPE \"... is not valid JSON",
        ("JSON.parse", "parseResponse", "loadChangelog"),
        "vendor.8b2e4d.js",
    ),
    ErrorSpec(
        "Error",
        "ResizeObserver loop completed with undelivered notifications.",
        ("ResizeObserver.observe", "useElementSize", "ChartContainer"),
        "vendor.8b2e4d.js",
    ),
    ErrorSpec(
        "TypeError",
        "Cannot set properties of null (setting 'innerHTML')",
        ("renderCodeSample", "highlightAll", "DocsPage.mount"),
        "docs.0a4f6b.js",
    ),
    ErrorSpec(
        "ChunkLoadError",
        "Loading chunk 742 failed. (error: https://cdn.example/assets/742.js)",
        ("__webpack_require__.f.j", "Array.reduce", "__webpack_require__.e", "loadCheckout"),
        "app.3f9a1c.js",
    ),
    ErrorSpec(
        "RangeError", "Maximum call stack size exceeded", ("deepMerge", "deepMerge", "deepMerge"), "app.3f9a1c.js"
    ),
    ErrorSpec("ReferenceError", "Stripe is not defined", ("initPayment", "CheckoutForm.mount"), "checkout.9d7e21.js"),
    ErrorSpec(
        "TypeError",
        "Cannot destructure property 'user' of 'session' as it is null.",
        ("AccountMenu", "renderWithHooks", "updateFunctionComponent"),
        "app.3f9a1c.js",
    ),
    ErrorSpec(
        "NotAllowedError",
        "play() failed because the user didn't interact with the document first.",
        ("HTMLVideoElement.play", "autoplayHero"),
        "app.3f9a1c.js",
    ),
    ErrorSpec(
        "QuotaExceededError",
        "Failed to execute 'setItem' on 'Storage': Setting the value of 'cart' exceeded the quota.",
        ("Storage.setItem", "persistCart", "CheckoutForm.onChange"),
        "checkout.9d7e21.js",
    ),
    ErrorSpec("AbortError", "The operation was aborted.", ("fetchWithTimeout", "searchDocs"), "docs.0a4f6b.js"),
    ErrorSpec(
        "TypeError", "e.preventDefault is not a function", ("onSubmit", "NewsletterForm.submit"), "app.3f9a1c.js"
    ),
    ErrorSpec(
        "Error", "Request failed with status code 502", ("settle", "XMLHttpRequest.onloadend"), "vendor.8b2e4d.js"
    ),
    ErrorSpec(
        "TypeError",
        "NetworkError when attempting to fetch resource.",
        ("fetchUsage", "loadDashboard"),
        "app.3f9a1c.js",
    ),
    ErrorSpec(
        "InvalidStateError",
        "Failed to execute 'send' on 'WebSocket': Still in CONNECTING state.",
        ("LiveFeed.send", "LiveFeed.subscribe"),
        "app.3f9a1c.js",
    ),
    ErrorSpec(
        "TypeError",
        "Cannot read properties of null (reading 'addEventListener')",
        ("bindMenu", "DOMContentLoaded"),
        "app.3f9a1c.js",
    ),
    ErrorSpec(
        "SecurityError",
        "Failed to read the 'localStorage' property from 'Window': Access is denied for this document.",
        ("readPreferences", "ThemeToggle.mount"),
        "app.3f9a1c.js",
    ),
)


def _error_spec(index: int) -> ErrorSpec:
    if index < len(ERROR_CATALOG):
        return ERROR_CATALOG[index]
    # Past the catalogue: more distinct messages of the commonest shape (benchmarks ask for many).
    base = ERROR_CATALOG[index % len(ERROR_CATALOG)]
    return ErrorSpec(
        "TypeError",
        f"Cannot read properties of undefined (reading 'field{index}')",
        (f"component{index}", *base.frames[1:]),
        base.bundle,
    )


def error_props(count: int, domain: str) -> list[tuple[str, str]]:
    """``count`` recurring errors as ``(event_name, props JSON)``, with multi-line stacks on ``domain``'s bundles."""
    result = []
    for index in range(count):
        spec = _error_spec(index)
        file_name = f"https://{domain}/assets/{spec.bundle}"
        # Positions derived from the index so the same error always points at the same place.
        line, column = 12 + (index * 7919 + 211) % 2400, 5 + (index * 104729 + 17) % 180
        frames = [f"    at {spec.frames[0]} ({file_name}:{line}:{column})"]
        for depth, fn in enumerate(spec.frames[1:], start=1):
            frames.append(f"    at {fn} ({file_name}:{line + depth * 37}:{1 + (column * depth * 13) % 90})")
        stack = f"{spec.name}: {spec.message}\n" + "\n".join(frames)
        props = {
            "message": spec.message,
            "stack": stack,
            "fileName": file_name,
            "lineNumber": line,
            "columnNumber": column,
        }
        result.append((spec.name, json.dumps(props, separators=(",", ":"))))
    return result


OUTBOUND_LINKS: tuple[tuple[str, str, float], ...] = (
    ("https://github.com/sitelens/sitelens", "GitHub", 30),
    ("https://twitter.com/sitelens", "Follow us", 8),
    ("https://www.linkedin.com/company/sitelens", "LinkedIn", 5),
    ("https://duckdb.org/docs/", "DuckDB documentation", 10),
    ("https://docs.python.org/3/library/json.html", "json module", 6),
    ("https://developer.mozilla.org/en-US/docs/Web/API/Performance", "Performance API", 8),
    ("https://web.dev/articles/vitals", "Web Vitals", 10),
    ("https://stripe.com/", "Stripe", 4),
    ("https://news.ycombinator.com/item?id=41234567", "Discuss on Hacker News", 7),
    ("https://www.npmjs.com/package/@rybbit/js", "npm package", 5),
)

BUTTONS: tuple[tuple[str, float], ...] = (
    ("Start free trial", 20),
    ("Get started", 15),
    ("Book a demo", 6),
    ("Copy snippet", 12),
    ("Toggle menu", 14),
    ("Show more", 10),
    ("Annual billing", 6),
    ("Next", 8),
    ("Accept", 5),
    ("Dark mode", 4),
)

COPIES: tuple[tuple[dict[str, object], float], ...] = (
    ({"sourceElement": "code", "text": "pip install sitelens", "textLength": 20}, 30),
    (
        {
            "sourceElement": "pre",
            "text": '<script src="https://app.sitelens.dev/script.js" data-site-id="1" defer></script>',
            "textLength": 82,
        },
        35,
    ),
    ({"sourceElement": "code", "text": "sitelens serve --port 8000", "textLength": 26}, 15),
    ({"sourceElement": "p", "text": "Web analytics you can trust", "textLength": 27}, 10),
    ({"sourceElement": "input", "text": "sl_live_…", "textLength": 9}, 10),
)

# formId -> the form's fields; the category whose pages carry it decides which form a submission is.
FORMS: dict[str, dict[str, object]] = {
    "newsletter-form": {
        "formId": "newsletter-form",
        "formName": "newsletter",
        "formAction": "/api/newsletter",
        "method": "POST",
        "fieldCount": 1,
    },
    "signup-form": {
        "formId": "signup-form",
        "formName": "signup",
        "formAction": "/signup",
        "method": "POST",
        "fieldCount": 4,
    },
    "checkout-form": {
        "formId": "checkout-form",
        "formName": "checkout",
        "formAction": "/checkout",
        "method": "POST",
        "fieldCount": 6,
    },
    "contact-form": {
        "formId": "contact-form",
        "formName": "contact",
        "formAction": "/contact",
        "method": "POST",
        "fieldCount": 4,
    },
    "docs-search": {
        "formId": "docs-search",
        "formName": "search",
        "formAction": "/docs/search",
        "method": "GET",
        "fieldCount": 1,
    },
    "settings-form": {
        "formId": "settings-form",
        "formName": "settings",
        "formAction": "/account/settings",
        "method": "POST",
        "fieldCount": 5,
    },
}
FORM_BY_CATEGORY: dict[str, str] = {
    "signup": "signup-form",
    "checkout": "checkout-form",
    "account": "settings-form",
    "docs": "docs-search",
    "about": "contact-form",
}

INPUTS: dict[str, tuple[tuple[str, str], ...]] = {
    "signup": (("input", "email"), ("input", "password"), ("input", "company")),
    "checkout": (("input", "cardholder-name"), ("select", "country"), ("input", "vat-number")),
    "account": (("input", "company"), ("input", "email"), ("select", "timezone")),
    "docs": (("input", "search"),),
    "about": (("input", "email"), ("textarea", "message")),
    "": (("input", "email"),),
}

# Everyday custom events (signup, purchase and newsletter_subscribe come from conversion scripts instead).
CUSTOM_EVENTS: tuple[tuple[str, dict[str, object], float], ...] = (
    ("video_play", {"videoId": "intro-2min", "title": "Sitelens in two minutes"}, 25),
    ("video_play", {"videoId": "goals-walkthrough", "title": "Goals walkthrough"}, 10),
    ("video_play", {"videoId": "self-hosting", "title": "Self-hosting in 5 minutes"}, 5),
    ("docs_search", {"query": "goals"}, 8),
    ("docs_search", {"query": "api key"}, 7),
    ("docs_search", {"query": "utm"}, 5),
    ("docs_search", {"query": "web vitals"}, 4),
    ("download", {"file": "privacy-whitepaper.pdf"}, 8),
    ("theme_toggle", {"theme": "dark"}, 10),
    ("theme_toggle", {"theme": "light"}, 4),
)

SIGNUPS: tuple[tuple[dict[str, object], float], ...] = (
    ({"plan": "free", "method": "email"}, 60),
    ({"plan": "free", "method": "github"}, 30),
    ({"plan": "free", "method": "google"}, 10),
)

PURCHASES: tuple[tuple[dict[str, object], float], ...] = (
    ({"plan": "pro", "amount": 49, "currency": "USD", "billing": "monthly"}, 35),
    ({"plan": "pro", "amount": 490, "currency": "USD", "billing": "yearly"}, 15),
    ({"plan": "starter", "amount": 19, "currency": "USD", "billing": "monthly"}, 25),
    ({"plan": "starter", "amount": 190, "currency": "USD", "billing": "yearly"}, 10),
    ({"plan": "business", "amount": 199, "currency": "USD", "billing": "monthly"}, 10),
    ({"plan": "business", "amount": 1990, "currency": "USD", "billing": "yearly"}, 5),
)

NEWSLETTERS: tuple[tuple[dict[str, object], float], ...] = (
    ({"list": "weekly-digest"}, 70),
    ({"list": "product-updates"}, 30),
)
