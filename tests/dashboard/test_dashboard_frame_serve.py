"""`sitelens serve` in one process: the dashboard at / reads the API of the same server over loopback."""

from __future__ import annotations

from api_backend.services import open_services
from api_backend.settings import load_settings
from sitelens.mount import create_combined_app
from tests.support import PASSWORD, free_port, live_server, make_account, make_site
from tests.support.dashboard_data import load_demo


def test_dash_serve001_one_process_api_and_dashboard(dash_br, tmp_path, output_dir):
    port = free_port()
    settings = load_settings(
        {}, data_dir=str(tmp_path / "data"), secret_key="test-secret-key-0123456789", host="127.0.0.1", port=port
    )
    services = open_services(settings)
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    load_demo(services, site.site_id)
    services.metadata.create_goal(site.site_id, "Pricing", "path", {"pathPattern": "/pricing"})
    app = create_combined_app(settings, services)
    try:
        with live_server(app, port) as base:
            dash_br.driver.get(base + "/")
            dash_br.wait_for_element("#login-email", timeout=15)
            dash_br.find_element("#login-email").send_keys("owner@example.com")
            dash_br.find_element("#login-password").send_keys(PASSWORD)
            dash_br.find_element("#login-submit").click()
            dash_br.wait_for_element(f"#site-{site.site_id}", timeout=15).click()
            dash_br.wait_for_text_to_equal("#overview-sessions", "10", timeout=15)  # a site opens on its overview
            dash_br.wait_for_element("#nav-goals", timeout=15).click()
            dash_br.wait_for_contains_text("#goals-table", "40.0%", timeout=15)
            dash_br.wait_for_text_to_equal("#frame-overview-sessions", "10", timeout=15)
            dash_br.driver.save_screenshot(str(output_dir / "serve-goals.png"))
            assert [e for e in dash_br.get_logs() if e["level"] == "SEVERE"] == []
    finally:
        services.close()
