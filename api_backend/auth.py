"""Credentials to principal, and the access guards every route uses.

A request carries at most one user credential (``Authorization: Bearer``: an ``sl_`` API key or a
dashboard sign-in token) and optionally a private link key (``X-Private-Key``). The role matrix of the
contract lives here and nowhere else:

    level    anonymous / private link / public   member   admin, owner
    READ     yes (that site only)                 yes      yes
    MEMBER   401                                  yes      yes
    ADMIN    401                                  403      yes

A signed-in caller with no membership in the site's organization gets 404 (unless the read is
allowed through the public flag or a private link key), and a caller without a credential gets 401 for a
missing site as for a private one, so existence is never revealed.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from enum import IntEnum
from typing import Annotated

from fastapi import Depends, Header, Request

from api_backend.domain.sites import check_site_key
from api_backend.errors import AuthenticationRequiredError, ForbiddenError, NotFoundError
from api_backend.services import Services
from api_backend.store.models import Organization, Site, User

__all__ = [
    "Access",
    "OrgAccess",
    "Principal",
    "SiteAccess",
    "authorize_org",
    "authorize_site",
    "get_principal",
    "get_services",
    "org_access",
    "require_user",
    "site_access",
]

ADMIN_ROLES = frozenset({"owner", "admin"})


class Access(IntEnum):
    """How much a route needs: read analytics, change goals and lists, or administer the site."""

    READ = 1
    MEMBER = 2
    ADMIN = 3


@dataclass(frozen=True)
class Principal:
    """Who is calling: a user (through an API key or a sign-in token), and any private link key."""

    user: User | None = None
    credential: str | None = None  # "api_key" | "token"
    token: str | None = None
    private_key: str | None = None


@dataclass(frozen=True)
class SiteAccess:
    """A site the caller may act on, and the caller's role in its organization (``None`` if not a member)."""

    site: Site
    role: str | None
    user: User | None

    @property
    def is_admin(self) -> bool:
        return self.role in ADMIN_ROLES


@dataclass(frozen=True)
class OrgAccess:
    organization: Organization
    role: str
    user: User


def get_services(request: Request) -> Services:
    """The process's ``Services`` (bound by ``create_app``)."""
    return request.app.state.services


def get_principal(
    services: Annotated[Services, Depends(get_services)],
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
    x_private_key: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> Principal:
    """Resolve the request's credentials; a credential that is present but unknown, revoked or expired is a 401."""
    private_key = x_private_key.strip() if x_private_key and x_private_key.strip() else None
    if not authorization:
        return Principal(private_key=private_key)
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise AuthenticationRequiredError("The Authorization header must be 'Bearer <API key or sign-in token>'.")
    if token.startswith("sl_"):
        user, credential = services.metadata.user_for_api_key(token), "api_key"
    else:
        user, credential = services.metadata.user_for_login_token(token), "token"
    if user is None:
        raise AuthenticationRequiredError("The credential is unknown, revoked or expired.")
    return Principal(user=user, credential=credential, token=token, private_key=private_key)


def require_user(principal: Annotated[Principal, Depends(get_principal)]) -> User:
    """The signed-in user, or 401."""
    if principal.user is None:
        raise AuthenticationRequiredError()
    return principal.user


def _private_key_matches(site: Site, presented: str | None) -> bool:
    if not presented or not site.private_link_key:
        return False
    return hmac.compare_digest(presented.encode(), site.private_link_key.encode())


def authorize_site(services: Services, principal: Principal, site_key: str, level: Access) -> SiteAccess:
    """Apply the role matrix to one site (by integer ``siteId`` or string ``id``)."""
    site = services.metadata.site(site_key)
    if site is None:
        # Without a credential a missing site looks like a private one, so ids cannot be probed for existence.
        if principal.user is None:
            raise AuthenticationRequiredError()
        raise NotFoundError("Site not found.")
    role = services.metadata.role_in(principal.user.id, site.organization_id) if principal.user else None
    if role is not None:
        if level is Access.ADMIN and role not in ADMIN_ROLES:
            raise ForbiddenError("Only an admin or owner of this site's organization may do this.")
        return SiteAccess(site=site, role=role, user=principal.user)
    if level is Access.READ and (site.public or _private_key_matches(site, principal.private_key)):
        return SiteAccess(site=site, role=None, user=principal.user)
    if principal.user is not None:
        raise NotFoundError("Site not found.")
    raise AuthenticationRequiredError()


def authorize_org(services: Services, principal: Principal, org_id: str, level: Access) -> OrgAccess:
    """Apply the role matrix to an organization: members read, admins and owners administer."""
    if principal.user is None:
        raise AuthenticationRequiredError()
    org = services.metadata.organization(org_id)
    role = services.metadata.role_in(principal.user.id, org_id) if org else None
    if org is None or role is None:
        raise NotFoundError("Organization not found.")
    if level is Access.ADMIN and role not in ADMIN_ROLES:
        raise ForbiddenError("Only an admin or owner of this organization may do this.")
    return OrgAccess(organization=org, role=role, user=principal.user)


def site_access(level: Access):
    """A FastAPI dependency guarding a ``{site_id}`` route at ``level``."""

    def dependency(
        site_id: str,
        services: Annotated[Services, Depends(get_services)],
        principal: Annotated[Principal, Depends(get_principal)],
    ) -> SiteAccess:
        return authorize_site(services, principal, check_site_key(site_id), level)

    return dependency


def org_access(level: Access):
    """A FastAPI dependency guarding an ``{organization_id}`` route at ``level``."""

    def dependency(
        organization_id: str,
        services: Annotated[Services, Depends(get_services)],
        principal: Annotated[Principal, Depends(get_principal)],
    ) -> OrgAccess:
        return authorize_org(services, principal, organization_id, level)

    return dependency


SiteReader = Annotated[SiteAccess, Depends(site_access(Access.READ))]
SiteMember = Annotated[SiteAccess, Depends(site_access(Access.MEMBER))]
SiteAdmin = Annotated[SiteAccess, Depends(site_access(Access.ADMIN))]
OrgMember = Annotated[OrgAccess, Depends(org_access(Access.MEMBER))]
OrgAdmin = Annotated[OrgAccess, Depends(org_access(Access.ADMIN))]
ServicesDep = Annotated[Services, Depends(get_services)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]
CurrentUser = Annotated[User, Depends(require_user)]
