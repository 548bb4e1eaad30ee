"""The public surface of ``api_client`` is pinned: names the dashboard and SDK users import must not drift."""

from __future__ import annotations

import inspect

import api_client
from api_client import activity, activity_reads, client, errors, models, query

CLIENT_NAMES = {"AnalyticsAPI", "Filter", "Query", "wilson_interval"}
ERROR_NAMES = {
    "APIConnectionError",
    "APIError",
    "AuthenticationError",
    "ConflictError",
    "ForbiddenError",
    "NotFoundError",
    "RateLimitError",
    "ServerError",
    "ValidationError",
}
MODEL_NAMES = {
    "ApiKeyInfo",
    "Breakdown",
    "BreakdownRow",
    "CreatedApiKey",
    "ErrorBucket",
    "ErrorEvent",
    "ErrorName",
    "ErrorNamePage",
    "FunnelStep",
    "Goal",
    "GoalConfig",
    "GoalPage",
    "GoalSession",
    "LoginResult",
    "Me",
    "MetricPage",
    "MetricRow",
    "Organization",
    "Overview",
    "OverviewBucket",
    "PageMeta",
    "Site",
    "SiteConfig",
    "UsageRow",
}
ACTIVITY_NAMES = {
    "LivePage",
    "LiveVisitors",
    "OverviewComparison",
    "SeriesComparison",
    "Session",
    "SessionDetail",
    "SessionPage",
    "TimelineItem",
    "UserProfile",
    "UserTotals",
}
# The server-side tracker lives in its own module and adds these when it lands.
TRACKER_NAMES = {"Tracker", "AsyncTracker", "TrackResult"}


def test_client_exports001_package_all_is_pinned():
    exported = set(api_client.__all__)
    assert len(api_client.__all__) == len(exported), "duplicate names in __all__"
    assert exported - TRACKER_NAMES == CLIENT_NAMES | ERROR_NAMES | MODEL_NAMES | ACTIVITY_NAMES
    for name in exported:
        assert getattr(api_client, name) is not None


def test_client_exports002_module_all_lists():
    assert set(errors.__all__) == ERROR_NAMES | {"error_from_response"}
    assert set(models.__all__) == MODEL_NAMES
    assert set(query.__all__) == {"FILTER_PARAMETERS", "FILTER_TYPES", "Filter", "Query"}
    assert set(client.__all__) == {"DEFAULT_BASE_URL", "AnalyticsAPI", "wilson_interval"}
    assert set(activity.__all__) == ACTIVITY_NAMES


def test_client_exports003_error_tree_shape():
    for name in ERROR_NAMES - {"APIError"}:
        assert issubclass(getattr(api_client, name), api_client.APIError)
    # The tree is drawn in the module docstring; every class appears there.
    for name in ERROR_NAMES:
        assert name in errors.__doc__


def test_client_exports004_interface_signatures():
    api = api_client.AnalyticsAPI
    init = inspect.signature(api.__init__).parameters
    assert list(init)[1:] == ["base_url", "token", "private_key", "client", "transport", "timeout"]
    assert init["timeout"].default == 15.0
    assert list(inspect.signature(api.goals).parameters) == [
        "self",
        "site_id",
        "query",
        "page",
        "limit",
        "sort",
        "order",
    ]
    assert inspect.signature(api.goals).parameters["limit"].default == 10
    assert inspect.signature(api.goal_sessions).parameters["limit"].default == 25
    assert inspect.signature(api.error_events).parameters["limit"].default == 20
    assert inspect.signature(api.error_time_series).parameters["bucket"].default == "hour"
    assert inspect.signature(api.overview_time_series).parameters["bucket"].default == "day"
    assert inspect.signature(api.metric).parameters["limit"].default == 100
    assert inspect.signature(api.goal_breakdown).parameters["parameter"].default == "channel"
    assert list(inspect.signature(api_client.APIError).parameters) == [
        "status",
        "code",
        "message",
        "details",
        "request_id",
    ]
    for method in (
        "health login logout me api_keys create_api_key delete_api_key organizations org_sites create_site site "
        "delete_site update_site_config excluded_ips excluded_countries private_link_key generate_private_link "
        "revoke_private_link goals create_goal update_goal delete_goal goal_sessions goal_breakdown error_names "
        "error_names_page error_events error_time_series org_usage metric overview overview_time_series funnel "
        "channel_ranking sessions session user live overview_compared overview_time_series_compared "
        "with_credentials close"
    ).split():
        assert callable(getattr(api, method)), method
        assert getattr(api, method).__doc__, f"{method} has no docstring"


def test_client_exports005_sdk_imports_only_stdlib_httpx_and_pydantic():
    import ast
    import sys
    from pathlib import Path

    allowed = set(sys.stdlib_module_names) | {"httpx", "pydantic", "api_client", "__future__"}
    for module in (client, errors, models, query, activity, activity_reads, api_client):
        tree = ast.parse(Path(module.__file__).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots = [node.module.split(".")[0]]
            else:
                continue
            assert set(roots) <= allowed, f"{module.__name__} imports {roots}"
