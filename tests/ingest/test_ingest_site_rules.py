"""The in-memory site rules: served from memory, refreshed after the TTL, dropped at once on invalidation."""

from __future__ import annotations

from api_backend.ingest.site_rules import SiteRulesCache
from tests.support import make_site


class Ticker:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_site_rules001_ttl_and_invalidation(services, owner, site):
    loads: list[str] = []

    def load(key: str):
        loads.append(key)
        return services.metadata.site(key)

    ticker = Ticker()
    cache = SiteRulesCache(load, ttl=5.0, clock=ticker)
    rules = cache.get(str(site.site_id))
    assert rules is not None and rules.block_bots is True and rules.id == site.id
    assert cache.get(site.id).site_id == site.site_id  # the string id works too
    assert cache.get(str(site.site_id)) is rules and loads == [str(site.site_id), site.id]

    # Another process changes the database: the cache keeps its copy until the TTL runs out.
    services.metadata.update_site(site.site_id, {"block_bots": False, "excluded_countries": ["de"]})
    ticker.now += 4.9
    assert cache.get(str(site.site_id)).block_bots is True
    ticker.now += 0.2
    fresh = cache.get(str(site.site_id))
    assert fresh.block_bots is False and fresh.excluded_countries == frozenset({"DE"})

    # A change through this process invalidates both keys of the site at once.
    services.metadata.update_site(site.site_id, {"track_url_params": False})
    cache.invalidate(site.site_id)
    assert cache.get(site.id).track_url_params is False
    assert cache.get(str(site.site_id)).track_url_params is False


def test_site_rules002_unknown_sites_are_remembered_briefly(services, owner):
    ticker = Ticker()
    cache = SiteRulesCache(services.metadata.site, ttl=5.0, clock=ticker)
    assert services.metadata.all_sites() == []
    assert cache.get("1") is None
    created = make_site(services, owner, "late.example")
    assert created.site_id == 1
    assert cache.get("1") is None  # the miss is remembered for a moment (floods of bad ids stay cheap)
    ticker.now += 1.1
    assert cache.get("1").site_id == created.site_id
