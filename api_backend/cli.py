"""The server side of the ``sitelens`` command: administer accounts, seed traffic, prepare the demo.

    sitelens admin create-user --email E --password P
    sitelens admin create-org --name N --owner-email E
    sitelens admin add-member --org ORG_ID --email E --role owner|admin|member
    sitelens admin create-site --org ORG_ID --domain D [--name N] [--public]
    sitelens admin create-api-key --email E [--name N]
    sitelens seed --site SITE_ID --events N [--days D] [--seed S] [--now ISO]
    sitelens clickhouse-schema [--cluster NAME] [--database NAME]
    sitelens migrate-events --to URL [--site ID] [--data-dir DIR]

``admin`` and ``seed`` print exactly one JSON object on stdout and exit 0, or print a one-line error on
stderr and exit non-zero. Admin commands open only the metadata database, never the DuckDB event file,
so they work while a server holds the event store's lock.

The commands that serve (``serve``, ``demo``, ``dashboard``) need the dashboard too, so they live in ``sitelens.cli``,
which adds them to this parser through ``build_parser(add_commands)``; ``api_backend`` itself never imports the
dashboard.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NoReturn

from api_backend.commands import (
    CommandError,
    ProgressBar,
    bulk_memory_limit,
    command_settings,
    open_event_services,
    usable_memory,
    without_huge_pages,
)
from api_backend.errors import APIError
from api_backend.settings import Settings, SettingsError
from api_backend.store.errors import RecordError
from api_backend.store.urls import parse_events_url

if TYPE_CHECKING:
    pass

__all__ = [
    "CommandError",
    "add_server_flags",
    "build_parser",
    "display_host",
    "env_setting",
    "main",
    "open_event_services",
    "parse_port",
    "prepare_demo",
    "server_settings",
]

PROG = "sitelens"


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _positive_int(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{raw!r} must be at least 1")
    return value


def _non_negative_int(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{raw!r} must not be negative")
    return value


def parse_port(raw: str) -> int:
    """A TCP port number from a command-line flag."""
    value = _positive_int(raw)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{raw!r} must be between 1 and 65535")
    return value


def _iso_instant(raw: str) -> datetime:
    try:
        value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not an ISO 8601 date-time such as 2026-03-01T09:30:00Z") from None
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


# Settings ----------------------------------------------------------------------------------------


def _metadata(args: argparse.Namespace):
    """The metadata store alone (applies migrations); the event store stays closed."""
    from api_backend.store.metadata import MetadataStore

    return MetadataStore(command_settings(args).database_url)


# Admin commands ----------------------------------------------------------------------------------


def _user_id(metadata: Any, email: str) -> str:
    user = metadata.user_by_email(email)
    if user is None:
        raise CommandError(f"no user with email {email.strip().lower()}")
    return user.id


def _require_org(metadata: Any, org_id: str) -> Any:
    org = metadata.organization(org_id)
    if org is None:
        raise CommandError(f"no organization with id {org_id}")
    return org


def _org_owner_id(metadata: Any, org_id: str) -> str:
    """The user recorded as creator of sites made from the command line: the organization's first owner."""
    from sqlalchemy import select

    from api_backend.store.models import Membership

    with metadata.session() as s:
        owner = s.scalar(
            select(Membership.user_id)
            .where(Membership.organization_id == org_id, Membership.role == "owner")
            .order_by(Membership.created_at, Membership.id)
            .limit(1)
        )
    if owner is None:
        raise CommandError(f"organization {org_id} has no owner; add one with `sitelens admin add-member`")
    return owner


def admin_create_user(args: argparse.Namespace) -> dict[str, Any]:
    """Create a user: ``{"userId"}``."""
    metadata = _metadata(args)
    try:
        user = metadata.create_user(args.email, args.password)
    finally:
        metadata.close()
    return {"userId": user.id}


def admin_create_org(args: argparse.Namespace) -> dict[str, Any]:
    """Create an organization owned by an existing user: ``{"organizationId"}``."""
    metadata = _metadata(args)
    try:
        org = metadata.create_organization(args.name, _user_id(metadata, args.owner_email))
    finally:
        metadata.close()
    return {"organizationId": org.id}


def admin_add_member(args: argparse.Namespace) -> dict[str, Any]:
    """Give a user a role in an organization (replacing any role it had): ``{"success": true}``."""
    metadata = _metadata(args)
    try:
        _require_org(metadata, args.org)
        metadata.add_member(args.org, _user_id(metadata, args.email), args.role)
    finally:
        metadata.close()
    return {"success": True}


def admin_create_site(args: argparse.Namespace) -> dict[str, Any]:
    """Create a site in an organization: the contract's Site object."""
    from api_backend.domain.sites import site_json, validate_site_create

    body: dict[str, Any] = {"domain": args.domain}
    if args.name is not None:
        body["name"] = args.name
    if args.public:
        body["public"] = True
    values = validate_site_create(body)
    metadata = _metadata(args)
    try:
        _require_org(metadata, args.org)
        site = metadata.create_site(args.org, _org_owner_id(metadata, args.org), **values)
    finally:
        metadata.close()
    return site_json(site, is_owner=True)


def admin_create_api_key(args: argparse.Namespace) -> dict[str, Any]:
    """Create an API key for a user: ``{"id", "apiKey"}`` (the raw key is shown only here)."""
    name = args.name.strip()
    if not name or len(name) > 255:
        raise CommandError("--name must be 1 to 255 characters")
    metadata = _metadata(args)
    try:
        key, raw = metadata.create_api_key(_user_id(metadata, args.email), name)
    finally:
        metadata.close()
    return {"id": key.id, "apiKey": raw}


# Seeding -----------------------------------------------------------------------------------------


def seed_command(args: argparse.Namespace) -> dict[str, Any]:
    """Insert synthetic traffic for a site: ``{"inserted": N}``."""
    settings = command_settings(args)
    # Check the site in the metadata database before taking the event store's lock.
    metadata = _metadata(args)
    try:
        site = metadata.site(args.site)
    finally:
        metadata.close()
    if site is None:
        raise CommandError(f"no site with id {args.site}")
    from api_backend.seed import write_events

    without_huge_pages()
    duckdb_store = parse_events_url(settings.events_url).scheme == "duckdb"
    limit = bulk_memory_limit(os.environ, usable_memory()) if duckdb_store else None
    if limit:
        settings = dataclasses.replace(settings, duckdb_memory_limit=limit)
    services = open_event_services(settings)
    if limit:  # said once the store is open, so that a failure is one line
        print(f"seeding with a DuckDB memory limit of {limit} (SITELENS_DUCKDB_MEMORY_LIMIT sets it)", file=sys.stderr)
    bar = ProgressBar(args.events)
    try:
        with services.events.bulk_load():
            inserted = write_events(
                services.writer,
                site.site_id,
                args.events,
                days=args.days,
                seed=args.seed,
                now=args.now,
                domain=site.domain,
                error_messages=args.error_messages,
                progress=bar.update,
            )
    finally:
        bar.close()
        services.close()
    return {"inserted": inserted}


# Servers -----------------------------------------------------------------------------------------


def server_settings(args: argparse.Namespace) -> Settings:
    """The settings of a serving command: the environment, overridden by ``--host``, ``--port`` and ``--data-dir``."""
    return command_settings(args, host=args.host, port=args.port)


def display_host(host: str) -> str:
    """The host part of a URL a browser can open for a bind address (wildcards become loopback)."""
    host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def prepare_demo(args: argparse.Namespace) -> Settings:
    """Create (first run) or reuse the demo account and traffic, print how to sign in; the settings to serve with."""
    from api_backend.demo import DEMO_EVENTS, format_summary, setup_demo

    settings = server_settings(args)
    services = open_event_services(settings)
    bar = ProgressBar(DEMO_EVENTS, label="demo traffic")
    try:
        summary = setup_demo(
            services, base_url=f"http://{display_host(settings.host)}:{settings.port}", progress=bar.update
        )
    finally:
        if bar.done:
            bar.close()
        services.close()
    print(format_summary(summary), flush=True)
    return settings


def env_setting(name: str, override: Any = None) -> Any:
    """One setting from the environment, checked like ``load_settings`` does, without touching the data folder."""
    from api_backend.settings import SETTINGS

    setting = next(s for s in SETTINGS if s.name == name)
    if override is not None:
        return override
    raw = os.environ.get(setting.env_var, setting.default)
    try:
        return setting.parse(raw)
    except SettingsError as exc:
        raise CommandError(f"{setting.env_var}={raw!r} {exc}") from None


# Parser ------------------------------------------------------------------------------------------


def add_server_flags(parser: argparse.ArgumentParser) -> None:
    """``--host``, ``--port`` and ``--data-dir`` of a serving command."""
    parser.add_argument("--host", help="address to listen on (default: $SITELENS_HOST or 127.0.0.1)")
    parser.add_argument("--port", type=parse_port, help="port to listen on (default: $SITELENS_PORT or 8000)")
    _add_data_dir(parser)


def _add_data_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", help="data folder (default: $SITELENS_DATA_DIR, then ./data)")


def build_parser(add_commands: Callable[[Any], None] | None = None) -> argparse.ArgumentParser:
    """The argument parser of the ``sitelens`` command; ``add_commands(subparsers)`` adds commands listed first."""
    parser = _Parser(prog=PROG, description="sitelens: web analytics you can trust, on one machine.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser, required=True)
    if add_commands is not None:
        add_commands(commands)

    admin = commands.add_parser("admin", help="manage users, organizations, sites and API keys")
    admin_commands = admin.add_subparsers(dest="admin_command", metavar="ACTION", parser_class=_Parser, required=True)

    p = admin_commands.add_parser("create-user", help="create a user")
    p.add_argument("--email", required=True)
    p.add_argument("--password", required=True, help="at least 8 characters")
    _add_data_dir(p)
    p.set_defaults(handler=admin_create_user, prints_json=True)

    p = admin_commands.add_parser("create-org", help="create an organization owned by a user")
    p.add_argument("--name", required=True)
    p.add_argument("--owner-email", required=True)
    _add_data_dir(p)
    p.set_defaults(handler=admin_create_org, prints_json=True)

    p = admin_commands.add_parser("add-member", help="give a user a role in an organization")
    p.add_argument("--org", required=True, help="organization id")
    p.add_argument("--email", required=True)
    p.add_argument("--role", required=True, choices=("owner", "admin", "member"))
    _add_data_dir(p)
    p.set_defaults(handler=admin_add_member, prints_json=True)

    p = admin_commands.add_parser("create-site", help="create a site in an organization")
    p.add_argument("--org", required=True, help="organization id")
    p.add_argument("--domain", required=True, help="bare hostname such as example.com")
    p.add_argument("--name", help="display name (default: the domain)")
    p.add_argument("--public", action="store_true", help="anyone may read the site's analytics")
    _add_data_dir(p)
    p.set_defaults(handler=admin_create_site, prints_json=True)

    p = admin_commands.add_parser("create-api-key", help="create an API key for a user")
    p.add_argument("--email", required=True)
    p.add_argument("--name", default="cli", help="label of the key (default: cli)")
    _add_data_dir(p)
    p.set_defaults(handler=admin_create_api_key, prints_json=True)

    seed = commands.add_parser("seed", help="insert synthetic traffic for a site (stop the server first)")
    seed.add_argument("--site", required=True, help="siteId (integer) or the site's string id")
    seed.add_argument("--events", required=True, type=_positive_int, help="number of events to insert")
    seed.add_argument("--days", type=_positive_int, default=30, help="days of traffic ending now (default: 30)")
    seed.add_argument("--seed", type=_non_negative_int, default=None, help="random seed for reproducible traffic")
    seed.add_argument("--now", type=_iso_instant, default=None, help="UTC instant the traffic ends at (default: now)")
    seed.add_argument(
        "--error-messages", type=_positive_int, default=8, help="distinct recurring error messages (default: 8)"
    )
    _add_data_dir(seed)
    seed.set_defaults(handler=seed_command, prints_json=True)

    from api_backend.clickhouse_admin import add_clickhouse_commands

    add_clickhouse_commands(commands, _add_data_dir)
    return parser


def main(argv: Sequence[str] | None = None, parser: argparse.ArgumentParser | None = None) -> int:
    """Run one command of ``parser`` (default: the server-side commands alone); returns the exit status."""
    args = (parser or build_parser()).parse_args(argv)
    try:
        result = args.handler(args)
    except CommandError as exc:
        return _fail(str(exc))
    except (APIError, RecordError) as exc:
        return _fail(exc.message)
    except KeyboardInterrupt:
        return _fail("interrupted", status=130)
    if getattr(args, "prints_json", False):
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()
    return 0


def _fail(message: str, status: int = 1) -> int:
    # One line, whatever the message holds, so scripts can show or log it as is.
    sys.stderr.write(f"{PROG}: error: {' '.join(message.split())}\n")
    sys.stderr.flush()
    return status


if __name__ == "__main__":
    sys.exit(main())
