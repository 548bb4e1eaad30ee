"""The metadata a benchmark needs in a fresh data dir: a user with an API key, an organization and one site."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from api_backend.settings import load_settings
from api_backend.store.metadata import MetadataStore

__all__ = ["BENCH_EMAIL", "BENCH_PASSWORD", "BenchAccount", "create_account"]

BENCH_EMAIL = "bench@sitelens.test"
BENCH_PASSWORD = "bench password 2026"


@dataclass
class BenchAccount:
    """Who the benchmark acts as, and the site it measures."""

    data_dir: Path
    user_id: str
    api_key: str
    organization_id: str
    site_id: int
    domain: str
    goals: dict[str, int] = field(default_factory=dict)

    @property
    def headers(self) -> dict[str, str]:
        """The bearer header of the account's API key."""
        return {"Authorization": f"Bearer {self.api_key}"}


def create_account(data_dir: Path, domain: str = "bench.example.com") -> BenchAccount:
    """Create the user, API key, organization and site in ``data_dir``'s metadata database (opened only briefly)."""
    settings = load_settings({}, data_dir=str(data_dir))
    metadata = MetadataStore(settings.database_url)
    try:
        user = metadata.create_user(BENCH_EMAIL, BENCH_PASSWORD)
        _, raw = metadata.create_api_key(user.id, "bench")
        org = metadata.create_organization("Benchmarks", user.id)
        site = metadata.create_site(org.id, user.id, domain, domain)
        return BenchAccount(Path(data_dir), user.id, raw, org.id, site.site_id, domain)
    finally:
        metadata.close()
