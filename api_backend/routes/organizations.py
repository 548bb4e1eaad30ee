"""Organizations and their sites (contract section 5)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, status

from api_backend.auth import CurrentUser, OrgAdmin, OrgMember, ServicesDep
from api_backend.domain.sites import site_json, validate_site_create
from api_backend.formats import iso_utc

router = APIRouter(tags=["organizations"])


@router.get("/organizations")
def list_organizations(user: CurrentUser, services: ServicesDep) -> dict[str, list[dict[str, Any]]]:
    """The caller's organizations with the caller's role in each."""
    return {
        "data": [
            {"id": org.id, "name": org.name, "role": role, "createdAt": iso_utc(org.created_at)}
            for org, role in services.metadata.organizations_of(user.id)
        ]
    }


@router.get("/organizations/{organization_id}/sites")
def list_sites(access: OrgMember, services: ServicesDep) -> dict[str, Any]:
    """The sites of an organization."""
    is_owner = access.role in ("owner", "admin")
    org = access.organization
    return {
        "organization": {"id": org.id, "name": org.name, "role": access.role},
        "data": [site_json(site, is_owner=is_owner) for site in services.metadata.sites_of(org.id)],
    }


@router.post("/organizations/{organization_id}/sites", status_code=status.HTTP_201_CREATED)
def create_site(
    access: OrgAdmin,
    services: ServicesDep,
    body: Annotated[
        dict[str, Any],
        Body(examples=[{"domain": "example.com", "name": "Example", "public": False, "blockBots": True}]),
    ],
) -> dict[str, Any]:
    """Create a site in the organization (admin or owner)."""
    values = validate_site_create(body)
    site = services.metadata.create_site(access.organization.id, access.user.id, **values)
    return site_json(site, is_owner=True)
