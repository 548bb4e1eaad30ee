"""One direction of dependency between the packages, read from the source of every module.

``api_backend`` (the server) and ``dashboard`` (the UI) never import each other: the dashboard reads the API over
HTTP through ``api_client``, and only ``sitelens`` (the command and the mount) depends on both. ``api_client``, the
public SDK, imports neither. Every ``import`` statement counts, including those inside functions.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

from tests.support import REPO_ROOT

ROOT = REPO_ROOT
# Package -> the first-party packages it must never import.
FORBIDDEN = {
    "api_backend": {"dashboard", "sitelens"},
    "dashboard": {"api_backend", "sitelens"},
    "api_client": {"api_backend", "dashboard", "sitelens"},
}


def imported_packages(path: Path) -> set[str]:
    """The top-level package of every module that ``path`` imports (relative imports stay in their package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_layering001_packages_import_only_downwards(package: str) -> None:
    modules = sorted((ROOT / package).rglob("*.py"))
    assert modules
    offending = {str(path.relative_to(ROOT)): sorted(imported_packages(path) & FORBIDDEN[package]) for path in modules}
    assert {path: names for path, names in offending.items() if names} == {}


def test_layering002_the_import_walk_sees_imports_inside_functions(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text("import os\n\ndef f():\n    from dashboard.app import create_dashboard\n    from . import x\n")
    assert imported_packages(module) == {"os", "dashboard"}


def test_layering003_the_composition_depends_on_both() -> None:
    imported = set().union(*(imported_packages(path) for path in (ROOT / "sitelens").rglob("*.py")))
    assert {"api_backend", "dashboard"} <= imported


def _module_graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (``TYPE_CHECKING`` imports included)."""
    graph: dict[str, set[str]] = {}
    for path in (ROOT / package).rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets.add(node.module)
                targets.update(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
        graph[name] = targets
    return {name: {t for t in targets if t in graph and t != name} for name, targets in graph.items()}


def test_layering004_backend_modules_import_without_cycles() -> None:
    # Every module of the server imports only "downwards": no two modules need each other, even inside functions.
    graph = _module_graph("api_backend")
    done: set[str] = set()
    cycles: list[list[str]] = []

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            cycles.append(path[path.index(name) :] + [name])
            return
        if name in done:
            return
        for target in sorted(graph[name]):
            visit(target, [*path, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])
    assert cycles == []


# What a pure builder never needs: an engine, a thread, a cache of results, the stores or the HTTP layer.
IMPURE = {"threading", "concurrent", "duckdb", "clickhouse_connect", "chdb", "sqlalchemy", "fastapi", "httpx"}
IMPURE_MODULES = ("api_backend.store", "api_backend.read", "api_backend.services", "api_backend.routes")


def test_layering005_query_builders_are_pure() -> None:
    # api_backend/query turns parameters into SQL; running it, caching it and waiting for writes is the reader's job.
    graph = _module_graph("api_backend")
    for path in sorted((ROOT / "api_backend" / "query").rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        assert not imported_packages(path) & IMPURE, name
        # store.events is the table's definition (columns, event types), which builders may name.
        table = "api_backend.store.events"
        impure = {t for t in graph[name] if t.startswith(IMPURE_MODULES) and not t.startswith(table)}
        assert not impure, name


# The HTTP layer: the app's exception tree and the web framework. Stores speak of records and files only.
HTTP = {"fastapi", "starlette"}


def test_layering006_stores_know_nothing_of_http() -> None:
    # A store raises api_backend.store.errors; the app (and the command line) decide what a refusal looks like.
    graph = _module_graph("api_backend")
    for path in sorted((ROOT / "api_backend" / "store").rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        assert not imported_packages(path) & HTTP, name
        assert not {t for t in graph[name] if t.startswith(("api_backend.errors", "api_backend.routes"))}, name


def test_layering007_tests_wait_one_way() -> None:
    # Waiting on a condition lives in tests/support/ alone, so a fix to how tests wait reaches every test.
    tests = ROOT / "tests"
    owners = [
        path.relative_to(ROOT).as_posix()
        for path in sorted(tests.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and node.name.startswith(("wait_until", "wait_for"))
    ]
    assert owners == ["tests/support/__init__.py"]
    # ... and no test borrows another library's poller, whose timeouts the suite's patience would not stretch.
    borrowers = [
        path.relative_to(ROOT).as_posix()
        for path in sorted(tests.rglob("*.py"))
        if "dash.testing.wait" in path.read_text(encoding="utf-8") and path.name != "test_layering.py"
    ]
    assert borrowers == []


def test_layering008_mypy_ignores_no_module() -> None:
    # Every module is type-checked: a mypy section that ignores a module's errors would hide them from `make lint`.
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert not config.get("ignore_errors", False)
    assert not [section["module"] for section in config.get("overrides", []) if section.get("ignore_errors")]
