"""The demo: a ready-to-explore account, site, goals and 60 days of traffic in a data folder.

``setup_demo(services, base_url=...)`` creates whatever is missing (first run: everything) and returns what a
person needs to look around: where to sign in, an API key and the private link. It is idempotent: a later run
finds the demo user, reuses the site, its goals, private link and events, and only issues a fresh API key
(raw keys are never stored, so the old one cannot be shown again).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from api_backend.domain.goals import validate_goal_body
from api_backend.services import Services
from api_backend.store.models import Site

__all__ = [
    "DEMO_DOMAIN",
    "DEMO_EMAIL",
    "DEMO_EVENTS",
    "DEMO_GOALS",
    "DEMO_ORGANIZATION",
    "DEMO_PASSWORD",
    "DemoSummary",
    "format_summary",
    "setup_demo",
]

DEMO_EMAIL = "demo@sitelens.dev"
DEMO_PASSWORD = "sitelens-demo"
DEMO_ORGANIZATION = "Demo"
DEMO_DOMAIN = "demo.sitelens.dev"
DEMO_SITE_NAME = "Sitelens demo"
DEMO_EVENTS = 200_000
DEMO_DAYS = 60  # twice the default 30-day view, so its previous period is as full as the view itself
DEMO_SEED = 2026

# Goals as the API accepts them (validated by the same function as POST /goals).
DEMO_GOALS: tuple[dict[str, Any], ...] = (
    {"name": "Visited pricing", "goalType": "path", "config": {"pathPattern": "/pricing"}},
    {"name": "Read a blog post", "goalType": "path", "config": {"pathPattern": "/blog/*"}},
    {"name": "Opened the docs", "goalType": "path", "config": {"pathPattern": "/docs/**"}},
    {"name": "Reached signup", "goalType": "path", "config": {"pathPattern": "/signup"}},
    {"name": "Signed up", "goalType": "event", "config": {"eventName": "signup"}},
    {
        "name": "Bought Pro",
        "goalType": "event",
        "config": {"eventName": "purchase", "eventPropertyKey": "plan", "eventPropertyValue": "pro"},
    },
    {"name": "Newsletter subscription", "goalType": "event", "config": {"eventName": "newsletter_subscribe"}},
)


@dataclass(frozen=True)
class DemoSummary:
    """What the demo prints: how to reach the dashboard and the API."""

    url: str
    email: str
    password: str
    api_key: str
    site_id: int
    site_key: str
    domain: str
    private_link_url: str
    events: int
    created: bool


def _find_demo_site(services: Services, user_id: str) -> tuple[str | None, Site | None]:
    """The demo organization's id and site, when an earlier run made them."""
    for org, _role in services.metadata.organizations_of(user_id):
        if org.name == DEMO_ORGANIZATION:
            site = next((s for s in services.metadata.sites_of(org.id) if s.domain == DEMO_DOMAIN), None)
            return org.id, site
    return None, None


def setup_demo(
    services: Services,
    *,
    base_url: str,
    events: int = DEMO_EVENTS,
    days: int = DEMO_DAYS,
    seed: int | None = DEMO_SEED,
    now: datetime | None = None,
    progress: Callable[[int], None] | None = None,
) -> DemoSummary:
    """Create (or find) the demo user, organization, site, goals, private link and traffic; issue an API key."""
    from api_backend.seed import write_events

    metadata = services.metadata
    user = metadata.user_by_email(DEMO_EMAIL)
    created = user is None
    if user is None:
        user = metadata.create_user(DEMO_EMAIL, DEMO_PASSWORD)
    org_id, site = _find_demo_site(services, user.id)
    if org_id is None:
        org_id = metadata.create_organization(DEMO_ORGANIZATION, user.id).id
    if site is None:
        # Web vitals and error tracking on, so the tracker would send what the seeded traffic contains.
        site = metadata.create_site(org_id, user.id, DEMO_DOMAIN, DEMO_SITE_NAME, web_vitals=True, track_errors=True)
        for body in DEMO_GOALS:
            name, goal_type, config = validate_goal_body(body)
            metadata.create_goal(site.site_id, name, goal_type, config)
    private_key = site.private_link_key or metadata.set_private_link_key(site.site_id, True)
    if services.events.count(site.site_id) == 0:
        write_events(
            services.writer,
            site.site_id,
            events,
            days=days,
            seed=seed,
            now=now,
            domain=DEMO_DOMAIN,
            progress=progress,
        )
    _, api_key = metadata.create_api_key(user.id, "demo")
    root = base_url.rstrip("/")
    return DemoSummary(
        url=f"{root}/",
        email=DEMO_EMAIL,
        password=DEMO_PASSWORD,
        api_key=api_key,
        site_id=site.site_id,
        site_key=site.id,
        domain=site.domain,
        # The key rides in the fragment, which browsers never send to the server, so it stays out of logs.
        private_link_url=f"{root}/share/{site.site_id}#{private_key}",
        events=services.events.count(site.site_id),
        created=created,
    )


def format_summary(summary: DemoSummary) -> str:
    """The text ``sitelens demo`` prints before it starts serving."""
    api = summary.url + "api"
    state = "created just now" if summary.created else "reused from an earlier run"
    return "\n".join(
        [
            f"sitelens demo is running at {summary.url}",
            f"  sign in:       {summary.email} / {summary.password}",
            f"  API key:       {summary.api_key}",
            f"  private link:  {summary.private_link_url}",
            f"  site:          {summary.domain} (siteId {summary.site_id}), {summary.events:,} events, {state}",
            f'  try:           curl -H "Authorization: Bearer {summary.api_key}" {api}/sites/{summary.site_id}/goals',
        ]
    )
