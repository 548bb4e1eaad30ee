"""AnalyticsAPI against the real app in-process: sign-in, API keys, organizations, sites, configuration, private links.

The app's TestClient is an ``httpx.Client``, so the SDK runs its real code path over the real routes.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from api_client import (
    AnalyticsAPI,
    ApiKeyInfo,
    AuthenticationError,
    ConflictError,
    CreatedApiKey,
    ForbiddenError,
    NotFoundError,
    Organization,
    Site,
    SiteConfig,
    ValidationError,
)
from tests.support import PASSWORD, make_account, make_site

BASE = "http://testserver/api"


@pytest.fixture
def api(client, owner):
    return AnalyticsAPI(BASE, client=client, token=owner.api_key)


@pytest.fixture
def anonymous(client):
    return AnalyticsAPI(BASE, client=client)


def test_client_admin001_health_needs_no_credential(anonymous):
    assert anonymous.health()["status"] == "ok"


def test_client_admin002_login_me_logout(anonymous, owner):
    result = anonymous.login("owner@example.com", PASSWORD)
    assert result.token
    assert result.email == "owner@example.com"
    assert result.user_id == owner.user.id
    assert result.expires_at.tzinfo is not None
    # Default lifetime is 30 days.
    assert timedelta(days=29) < result.expires_at - datetime.now(UTC) <= timedelta(days=30, minutes=1)
    assert anonymous.token is None  # login does not change the client
    signed_in = anonymous.with_credentials(token=result.token)
    me = signed_in.me()
    assert (me.user_id, me.email) == (owner.user.id, "owner@example.com")
    signed_in.logout()
    with pytest.raises(AuthenticationError) as caught:
        signed_in.me()
    assert caught.value.status == 401
    assert caught.value.code == "AUTHENTICATION_REQUIRED"


def test_client_admin003_wrong_password_and_no_credential_are_401(anonymous, owner):
    with pytest.raises(AuthenticationError) as caught:
        anonymous.login("owner@example.com", "wrong password")
    assert caught.value.message == "Wrong email or password."
    with pytest.raises(AuthenticationError):
        anonymous.me()
    with pytest.raises(AuthenticationError):
        anonymous.with_credentials(token="sl_not-a-real-key").organizations()


def test_client_admin004_api_keys_create_list_delete(api):
    created = api.create_api_key("reporting")
    assert isinstance(created, CreatedApiKey)
    assert created.api_key.startswith("sl_")
    assert created.name == "reporting"
    keys = api.api_keys()
    assert all(isinstance(key, ApiKeyInfo) for key in keys)
    assert {key.name for key in keys} == {"tests", "reporting"}
    listed = next(key for key in keys if key.id == created.id)
    assert created.api_key not in (listed.start or "") or len(listed.start or "") < len(created.api_key)
    # The new key works on its own, then stops working once deleted.
    assert api.with_credentials(token=created.api_key).me().email == "owner@example.com"
    api.delete_api_key(created.id)
    assert {key.id for key in api.api_keys()} == {key.id for key in keys} - {created.id}
    with pytest.raises(AuthenticationError):
        api.with_credentials(token=created.api_key).me()
    with pytest.raises(NotFoundError):
        api.delete_api_key(created.id)


def test_client_admin005_create_api_key_bad_name_is_validation_error(api):
    with pytest.raises(ValidationError) as caught:
        api.create_api_key("")
    assert caught.value.status == 400
    assert caught.value.code == "INVALID_REQUEST"
    assert caught.value.details and caught.value.details[0]["field"] == "name"


def test_client_admin006_organizations_and_their_sites(api, site):
    orgs = api.organizations()
    assert len(orgs) == 1
    org = orgs[0]
    assert isinstance(org, Organization)
    assert (org.id, org.role) == (site.organization_id, "owner")
    assert org.created_at is not None
    sites = api.org_sites(org.id)
    assert [(s.site_id, s.domain, s.is_owner) for s in sites] == [(site.site_id, "example.com", True)]


def test_client_admin007_create_site_defaults_and_options(api, site):
    org_id = site.organization_id
    plain = api.create_site(org_id, "https://Shop.Example.org/")
    assert isinstance(plain, Site)
    assert plain.domain == "shop.example.org"
    assert plain.name == "shop.example.org"
    assert plain.organization_id == org_id
    assert (plain.block_bots, plain.track_outbound, plain.track_url_params) == (True, True, True)
    assert (plain.public, plain.salt_user_ids, plain.session_replay, plain.web_vitals, plain.track_errors) == (
        False,
        False,
        False,
        False,
        False,
    )
    tuned = api.create_site(org_id, "blog.example.org", name="Blog", public=True, salt_user_ids=True, block_bots=False)
    assert (tuned.name, tuned.public, tuned.salt_user_ids, tuned.block_bots) == ("Blog", True, True, False)
    assert {s.domain for s in api.org_sites(org_id)} == {"example.com", "shop.example.org", "blog.example.org"}


def test_client_admin008_duplicate_domain_is_conflict(api, site):
    with pytest.raises(ConflictError) as caught:
        api.create_site(site.organization_id, "EXAMPLE.com")
    assert caught.value.status == 409
    assert caught.value.code == "CONFLICT"
    assert len(api.org_sites(site.organization_id)) == 1


def test_client_admin009_bad_domain_is_validation_error(api, site):
    with pytest.raises(ValidationError) as caught:
        api.create_site(site.organization_id, "not a domain")
    assert caught.value.field_messages().keys() == {"domain"}


def test_client_admin010_get_site_by_integer_and_string_id(api, site):
    by_int = api.site(site.site_id)
    by_str = api.site(site.id)
    assert by_int == by_str
    assert (by_int.id, by_int.site_id, by_int.domain, by_int.is_owner) == (site.id, site.site_id, "example.com", True)
    assert by_int.created_at.tzinfo is not None and by_int.updated_at is not None
    assert by_int.created_by == site.created_by


def test_client_admin011_unknown_site_and_foreign_site_are_not_found(api, services, site):
    with pytest.raises(NotFoundError) as caught:
        api.site(999_999)
    assert caught.value.status == 404
    stranger = make_account(services, "stranger@example.com")
    with pytest.raises(NotFoundError):
        api.with_credentials(token=stranger.api_key).site(site.site_id)


def test_client_admin012_update_config_snake_and_camel_case(api, site):
    config = api.update_site_config(
        site.site_id,
        block_bots=False,
        excluded_ips=["10.0.0.0/8", "192.168.1.1-192.168.1.9"],
        excludedCountries=["fr", "DE"],
        webVitals=True,
        track_errors=True,
    )
    assert isinstance(config, SiteConfig)
    assert config.block_bots is False
    assert config.web_vitals is True and config.track_errors is True
    assert config.excluded_ips == ["10.0.0.0/8", "192.168.1.1-192.168.1.9"]
    assert config.excluded_countries == ["FR", "DE"]
    assert api.excluded_ips(site.site_id) == ["10.0.0.0/8", "192.168.1.1-192.168.1.9"]
    assert api.excluded_countries(site.site_id) == ["FR", "DE"]
    assert api.site(site.site_id).block_bots is False


def test_client_admin013_bad_config_lists_every_bad_field_and_changes_nothing(api, site):
    with pytest.raises(ValidationError) as caught:
        api.update_site_config(site.site_id, public="yes", excluded_ips=["999.1.1.1"], colour="blue")
    error = caught.value
    assert error.status == 400 and error.code == "INVALID_REQUEST"
    assert set(error.field_messages()) == {"public", "excludedIPs.0", "colour"}
    assert api.excluded_ips(site.site_id) == []
    assert api.site(site.site_id).public is False


def test_client_admin014_same_field_twice_is_refused_before_sending(api, site):
    with pytest.raises(ValueError):
        api.update_site_config(site.site_id, block_bots=True, blockBots=False)


def test_client_admin015_member_may_read_lists_but_not_configure(api, services, site):
    member = make_account(services, "member@example.com")
    services.metadata.add_member(site.organization_id, member.user.id, "member")
    as_member = api.with_credentials(token=member.api_key)
    assert as_member.site(site.site_id).is_owner is False
    assert as_member.excluded_ips(site.site_id) == []
    assert as_member.excluded_countries(site.site_id) == []
    with pytest.raises(ForbiddenError) as caught:
        as_member.update_site_config(site.site_id, public=True)
    assert caught.value.status == 403 and caught.value.code == "FORBIDDEN"
    with pytest.raises(ForbiddenError):
        as_member.generate_private_link(site.site_id)
    with pytest.raises(ForbiddenError):
        as_member.delete_site(site.site_id)
    with pytest.raises(ForbiddenError):
        as_member.create_site(site.organization_id, "other.example.com")
    assert api.site(site.site_id).public is False


def test_client_admin016_private_link_generate_use_revoke(api, anonymous, site):
    assert api.private_link_key(site.site_id) is None
    key = api.generate_private_link(site.site_id)
    assert len(key) >= 22
    assert api.private_link_key(site.site_id) == key
    viewer = anonymous.with_credentials(private_key=key)
    assert viewer.private_key == key
    assert viewer.site(site.site_id).domain == "example.com"
    assert viewer.site(site.site_id).is_owner is False
    # The key is read-only: configuration and lists need a user.
    with pytest.raises(AuthenticationError):
        viewer.update_site_config(site.site_id, public=True)
    with pytest.raises(AuthenticationError):
        viewer.excluded_ips(site.site_id)
    # Regenerating replaces the key at once.
    newer = api.generate_private_link(site.site_id)
    assert newer != key
    with pytest.raises(AuthenticationError):
        viewer.site(site.site_id)
    assert anonymous.with_credentials(private_key=newer).site(site.site_id).site_id == site.site_id
    api.revoke_private_link(site.site_id)
    assert api.private_link_key(site.site_id) is None
    with pytest.raises(AuthenticationError):
        anonymous.with_credentials(private_key=newer).site(site.site_id)


def test_client_admin017_anonymous_reads_only_public_sites(api, anonymous, services, owner):
    private = make_site(services, owner, "private.example.com")
    public = make_site(services, owner, "public.example.com", public=True)
    assert anonymous.site(public.site_id).domain == "public.example.com"
    with pytest.raises(AuthenticationError):
        anonymous.site(private.site_id)


def test_client_admin018_delete_site(api, site):
    api.delete_site(site.site_id)
    with pytest.raises(NotFoundError):
        api.site(site.site_id)
    assert api.org_sites(site.organization_id) == []
    with pytest.raises(NotFoundError):
        api.delete_site(site.site_id)


def test_client_admin019_with_credentials_shares_the_pool_and_close_is_safe(client, owner, site):
    api = AnalyticsAPI(BASE, client=client, token=owner.api_key)
    other = api.with_credentials(private_key="k")
    assert other.base_url == BASE and other.token is None and other.private_key == "k"
    other.close()
    assert api.me().email == "owner@example.com"  # closing the derived client closed nothing
    with AnalyticsAPI(BASE, client=client, token=owner.api_key) as scoped:
        assert scoped.organizations()
    # An injected client is the caller's: it stays open after the context ends.
    assert client.get("/api/health").status_code == 200
    assert "sl_" not in repr(api) and "token=set" in repr(api)
