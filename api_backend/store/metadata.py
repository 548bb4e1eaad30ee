"""The metadata repository: the only code that talks to SQLAlchemy.

Every method opens its own short transaction, so the store is safe to share between threads and
works while command-line admin commands change the same database from another process.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import ColumnElement, CursorResult, Engine, create_engine, delete, event, func, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import InstrumentedAttribute, Session, sessionmaker

from api_backend.migrations import upgrade_to_head
from api_backend.security import (
    hash_password,
    hash_token,
    new_api_key,
    new_login_token,
    new_private_link_key,
    new_public_id,
    verify_password,
)
from api_backend.store.errors import RecordConflictError, RecordInvalidError, RecordNotFoundError
from api_backend.store.models import (
    ROLES,
    ApiKey,
    Goal,
    LoginFailure,
    LoginToken,
    Membership,
    Organization,
    Site,
    User,
    utcnow,
)

__all__ = ["MetadataStore", "engine_url"]

LAST_USED_RESOLUTION = timedelta(minutes=1)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.close()


def engine_url(database_url: str) -> str:
    """Pick the psycopg 3 driver for plain ``postgresql://`` URLs (SQLAlchemy would default to psycopg2)."""
    for prefix in ("postgresql://", "postgres://"):
        if database_url.startswith(prefix):
            return "postgresql+psycopg://" + database_url.removeprefix(prefix)
    return database_url


class MetadataStore:
    """Users, organizations, memberships, credentials, sites and goals."""

    def __init__(self, database_url: str, *, migrate: bool = True) -> None:
        database_url = engine_url(database_url)
        if migrate:
            upgrade_to_head(database_url)
        self.engine: Engine = create_engine(database_url)
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A transaction: committed when the block ends normally, rolled back otherwise."""
        with self._sessions() as session, session.begin():
            yield session

    def ping(self) -> None:
        """Raise if the database does not answer."""
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    def close(self) -> None:
        self.engine.dispose()

    # Users -------------------------------------------------------------------------------------

    def create_user(self, email: str, password: str) -> User:
        """Create a user; the email is stored lower-cased and must be new."""
        email = email.strip().lower()
        if "@" not in email or len(email) > 320:
            raise RecordInvalidError("email", "must be an email address")
        if len(password) < 8:
            raise RecordInvalidError("password", "must be at least 8 characters long")
        user = User(id=new_public_id(12), email=email, password_hash=hash_password(password), created_at=utcnow())
        try:
            with self.session() as s:
                s.add(user)
        except IntegrityError:
            raise RecordConflictError(f"A user with email {email} already exists.") from None
        return user

    def user_by_email(self, email: str) -> User | None:
        with self.session() as s:
            return s.scalar(select(User).where(User.email == email.strip().lower()))

    def check_password(self, email: str, password: str) -> User | None:
        """The user when ``password`` is right, else ``None`` (same cost for unknown emails)."""
        user = self.user_by_email(email)
        if user is None:
            verify_password(password, hash_password("timing-equaliser"))
            return None
        return user if verify_password(password, user.password_hash) else None

    def record_login_failure(self, email: str) -> None:
        with self.session() as s:
            s.add(LoginFailure(email=email.strip().lower(), at=utcnow()))

    def recent_login_failures(self, email: str, window: timedelta) -> tuple[int, datetime | None]:
        """How many failed sign-ins ``email`` had within ``window``, and the oldest of them."""
        since = utcnow() - window
        with self.session() as s:
            s.execute(delete(LoginFailure).where(LoginFailure.at < since))
            count, oldest = s.execute(
                select(func.count(), func.min(LoginFailure.at)).where(
                    LoginFailure.email == email.strip().lower(), LoginFailure.at >= since
                )
            ).one()
        return int(count), oldest

    # Login tokens ------------------------------------------------------------------------------

    def create_login_token(self, user_id: str, lifetime: timedelta) -> tuple[str, datetime]:
        token = new_login_token()
        expires_at = utcnow() + lifetime
        with self.session() as s:
            s.add(LoginToken(user_id=user_id, token_hash=hash_token(token), created_at=utcnow(), expires_at=expires_at))
        return token, expires_at

    def user_for_login_token(self, token: str) -> User | None:
        with self.session() as s:
            row = s.scalar(select(LoginToken).where(LoginToken.token_hash == hash_token(token)))
            if row is None or row.expires_at <= utcnow():
                return None
            return s.get(User, row.user_id)

    def revoke_login_token(self, token: str) -> None:
        with self.session() as s:
            s.execute(delete(LoginToken).where(LoginToken.token_hash == hash_token(token)))

    # API keys ----------------------------------------------------------------------------------

    def create_api_key(self, user_id: str, name: str) -> tuple[ApiKey, str]:
        """Create a key; the raw key is returned here once and never stored."""
        raw = new_api_key()
        key = ApiKey(
            id=new_public_id(8),
            user_id=user_id,
            name=name,
            key_hash=hash_token(raw),
            start=raw[:7],
            created_at=utcnow(),
        )
        with self.session() as s:
            s.add(key)
        return key, raw

    def list_api_keys(self, user_id: str) -> list[ApiKey]:
        with self.session() as s:
            return list(s.scalars(select(ApiKey).where(ApiKey.user_id == user_id).order_by(ApiKey.created_at)))

    def delete_api_key(self, user_id: str, key_id: str) -> bool:
        with self.session() as s:
            # A DELETE answers with a cursor result, which carries the row count.
            result = cast(
                CursorResult[Any], s.execute(delete(ApiKey).where(ApiKey.id == key_id, ApiKey.user_id == user_id))
            )
            return result.rowcount > 0

    def user_for_api_key(self, raw: str) -> User | None:
        """The owner of a key; looked up by SHA-256 hash (an index probe, so timing leaks nothing useful)."""
        with self.session() as s:
            key = s.scalar(select(ApiKey).where(ApiKey.key_hash == hash_token(raw)))
            if key is None:
                return None
            now = utcnow()
            # Record use at minute resolution: a write transaction on every authenticated request would cost more
            # than the request itself.
            if key.last_used_at is None or now - key.last_used_at >= LAST_USED_RESOLUTION:
                key.last_used_at = now
            return s.get(User, key.user_id)

    # Organizations -----------------------------------------------------------------------------

    def create_organization(self, name: str, owner_id: str) -> Organization:
        name = name.strip()
        if not name or len(name) > 255:
            raise RecordInvalidError("name", "must be 1 to 255 characters")
        org = Organization(id=new_public_id(12), name=name, created_at=utcnow())
        with self.session() as s:
            if s.get(User, owner_id) is None:
                raise RecordNotFoundError("User not found.")
            s.add(org)
            s.flush()
            s.add(Membership(organization_id=org.id, user_id=owner_id, role="owner", created_at=utcnow()))
        return org

    def organization(self, org_id: str) -> Organization | None:
        with self.session() as s:
            return s.get(Organization, org_id)

    def add_member(self, org_id: str, user_id: str, role: str) -> None:
        """Give ``user_id`` a role in ``org_id`` (replacing any role it had)."""
        if role not in ROLES:
            raise RecordInvalidError("role", f"must be one of {', '.join(ROLES)}")
        with self.session() as s:
            if s.get(Organization, org_id) is None:
                raise RecordNotFoundError("Organization not found.")
            member = s.scalar(
                select(Membership).where(Membership.organization_id == org_id, Membership.user_id == user_id)
            )
            if member is None:
                s.add(Membership(organization_id=org_id, user_id=user_id, role=role, created_at=utcnow()))
            else:
                member.role = role

    def role_in(self, user_id: str, org_id: str) -> str | None:
        """The user's role in the organization, or ``None`` when not a member."""
        with self.session() as s:
            return s.scalar(
                select(Membership.role).where(Membership.organization_id == org_id, Membership.user_id == user_id)
            )

    def organizations_of(self, user_id: str) -> list[tuple[Organization, str]]:
        with self.session() as s:
            rows = s.execute(
                select(Organization, Membership.role)
                .join(Membership, Membership.organization_id == Organization.id)
                .where(Membership.user_id == user_id)
                .order_by(Organization.created_at, Organization.id)
            ).all()
            return [(org, role) for org, role in rows]

    # Sites -------------------------------------------------------------------------------------

    def create_site(self, org_id: str, created_by: str, domain: str, name: str, **flags: Any) -> Site:
        """Create a site; ``flags`` are column values (``public``, ``block_bots``, ...)."""
        now = utcnow()
        site = Site(
            id=new_public_id(6),
            name=name,
            domain=domain,
            organization_id=org_id,
            created_by=created_by,
            created_at=now,
            updated_at=now,
            public=False,
            salt_user_ids=False,
            block_bots=True,
            session_replay=False,
            web_vitals=False,
            track_errors=False,
            track_outbound=True,
            track_url_params=True,
            excluded_ips=[],
            excluded_countries=[],
        )
        for key, value in flags.items():
            setattr(site, key, value)
        with self.session() as s:
            if s.get(Organization, org_id) is None:
                raise RecordNotFoundError("Organization not found.")
            duplicate = s.scalar(select(Site.site_id).where(Site.organization_id == org_id, Site.domain == domain))
            if duplicate is not None:
                raise RecordConflictError(f"The domain {domain} is already a site of this organization.")
            s.add(site)
        return site

    def site(self, key: int | str) -> Site | None:
        """A site by integer ``siteId`` (or a string of digits) or by its random string ``id``."""
        with self.session() as s:
            # isdigit() alone also accepts "²" and Arabic-Indic digits, which int() refuses or reads as digits.
            if isinstance(key, int) or (isinstance(key, str) and key.isascii() and key.isdigit()):
                number = int(key)
                return s.get(Site, number) if number < 2**31 else None
            return s.scalar(select(Site).where(Site.id == key))

    def sites_of(self, org_id: str) -> list[Site]:
        with self.session() as s:
            return list(s.scalars(select(Site).where(Site.organization_id == org_id).order_by(Site.site_id)))

    def all_sites(self) -> list[Site]:
        with self.session() as s:
            return list(s.scalars(select(Site).order_by(Site.site_id)))

    def update_site(self, site_id: int, values: dict[str, Any]) -> Site:
        """Set column values on a site and bump ``updated_at``."""
        with self.session() as s:
            site = s.get(Site, site_id)
            if site is None:
                raise RecordNotFoundError("Site not found.")
            for key, value in values.items():
                setattr(site, key, value)
            site.updated_at = utcnow()
        return site

    def delete_site(self, site_id: int) -> None:
        """Remove a site with its goals and private link (events are the event store's job)."""
        with self.session() as s:
            s.execute(delete(Goal).where(Goal.site_id == site_id))
            s.execute(delete(Site).where(Site.site_id == site_id))

    def set_private_link_key(self, site_id: int, generate: bool) -> str | None:
        """Generate a fresh key (replacing any old one) or revoke it; return the key now in force."""
        key = new_private_link_key() if generate else None
        self.update_site(site_id, {"private_link_key": key})
        return key

    # Goals -------------------------------------------------------------------------------------

    def create_goal(self, site_id: int, name: str | None, goal_type: str, config: dict[str, Any]) -> Goal:
        goal = Goal(site_id=site_id, name=name, goal_type=goal_type, config=config, created_at=utcnow())
        with self.session() as s:
            s.add(goal)
        return goal

    def goal(self, goal_id: int) -> Goal | None:
        with self.session() as s:
            return s.get(Goal, goal_id) if goal_id < 2**31 else None

    def replace_goal(self, goal_id: int, name: str | None, goal_type: str, config: dict[str, Any]) -> Goal:
        with self.session() as s:
            goal = s.get(Goal, goal_id)
            if goal is None:
                raise RecordNotFoundError("Goal not found.")
            goal.name, goal.goal_type, goal.config = name, goal_type, config
        return goal

    def delete_goal(self, goal_id: int) -> None:
        with self.session() as s:
            s.execute(delete(Goal).where(Goal.goal_id == goal_id))

    def count_goals(self, site_id: int) -> int:
        with self.session() as s:
            return int(s.scalar(select(func.count()).select_from(Goal).where(Goal.site_id == site_id)) or 0)

    def goals_page(self, site_id: int, sort: str, descending: bool, limit: int, offset: int) -> list[Goal]:
        """One page of a site's goals, sorted by ``goalId|name|goalType|createdAt`` (ties by id)."""
        columns: dict[str, InstrumentedAttribute[Any]] = {
            "goalId": Goal.goal_id,
            "name": Goal.name,
            "goalType": Goal.goal_type,
            "createdAt": Goal.created_at,
        }
        column = columns[sort]
        order: list[ColumnElement[Any]] = (
            [column.desc(), Goal.goal_id.desc()] if descending else [column.asc(), Goal.goal_id.asc()]
        )
        with self.session() as s:
            return list(
                s.scalars(select(Goal).where(Goal.site_id == site_id).order_by(*order).limit(limit).offset(offset))
            )

    def all_goals(self, site_id: int) -> list[Goal]:
        with self.session() as s:
            return list(s.scalars(select(Goal).where(Goal.site_id == site_id).order_by(Goal.goal_id)))
