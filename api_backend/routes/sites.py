"""One site: read, delete, configure, exclusion lists and the private link (contract section 5)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body
from pydantic import BaseModel, ConfigDict

from api_backend.auth import ServicesDep, SiteAdmin, SiteMember, SiteReader
from api_backend.domain.sites import site_config_json, site_json, validate_config_update

router = APIRouter(tags=["sites"])


class PrivateLinkAction(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: Literal["generate_private_link_key", "revoke_private_link_key"]


@router.get("/sites/{site_id}")
def get_site(access: SiteReader) -> dict[str, Any]:
    """The Site object (any caller who may read the site; non-members see less)."""
    return site_json(access.site, is_owner=access.is_admin, member=access.role is not None)


@router.delete("/sites/{site_id}")
def delete_site(access: SiteAdmin, services: ServicesDep) -> dict[str, bool]:
    """Remove the site, its goals, its private link and every stored event of it."""
    services.events.delete_site(access.site.site_id)
    services.metadata.delete_site(access.site.site_id)
    services.ingestor.site_deleted(access.site.site_id)
    services.forget_cached_reads()
    return {"success": True}


@router.put("/sites/{site_id}/config")
def update_config(
    access: SiteAdmin,
    services: ServicesDep,
    body: Annotated[dict[str, Any], Body(examples=[{"blockBots": True, "excludedIPs": ["10.0.0.0/8"]}])],
) -> dict[str, Any]:
    """Change any subset of the configuration; every field is checked before anything is saved."""
    values = validate_config_update(body)
    site = services.metadata.update_site(access.site.site_id, values)
    services.ingestor.site_changed(site.site_id)
    return {"success": True, "message": "Site configuration updated.", "config": site_config_json(site)}


@router.get("/sites/{site_id}/excluded-ips")
def excluded_ips(access: SiteMember) -> dict[str, Any]:
    """The site's excluded IP patterns."""
    return {"success": True, "excludedIPs": list(access.site.excluded_ips or [])}


@router.get("/sites/{site_id}/excluded-countries")
def excluded_countries(access: SiteMember) -> dict[str, Any]:
    """The site's excluded country codes."""
    return {"success": True, "excludedCountries": list(access.site.excluded_countries or [])}


@router.get("/sites/{site_id}/private-link-config")
def get_private_link(access: SiteAdmin) -> dict[str, Any]:
    """The private link key in force, or ``null``."""
    return {"success": True, "data": {"privateLinkKey": access.site.private_link_key}}


@router.post("/sites/{site_id}/private-link-config")
def change_private_link(access: SiteAdmin, services: ServicesDep, body: PrivateLinkAction) -> dict[str, Any]:
    """Generate a new key (the old one stops working at once) or revoke it."""
    key = services.metadata.set_private_link_key(access.site.site_id, body.action == "generate_private_link_key")
    return {"success": True, "data": {"privateLinkKey": key}}
