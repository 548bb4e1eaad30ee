/*
 * sitelens dashboard: the one piece of page script.
 * A page that must send the person elsewhere (not signed in, credential expired) renders a marker
 * <div class="redirect" data-href="..."> (dashboard.components.common.redirect). This watches for such
 * markers and follows them. data-clear-auth="1" also forgets the tab's sign-in token first; data-come-back="1"
 * adds next=<this page> so sign-in returns here.
 * It also lets Escape close a dialog (the button marked data-dismiss), and loads the chart library while the
 * browser is idle on a page marked .preload-charts, so the first chart a click opens does not freeze the page.
 * On a page marked data-unsaved-guard, typing something and then leaving (a link, or closing the tab) asks first,
 * until a button marked data-saves is pressed.
 * On a narrow screen the navbar's menu button (aria-controls) and the "Dates and filters" button fold their part of
 * the page open and shut: CSS shows it while the button's aria-expanded is "true". The menu shuts again on Escape, a
 * click elsewhere, or moving to another page.
 */
(function () {
  "use strict";
  var AUTH_KEY = "frame-auth";

  // The page the browser is on (path without the app's URL prefix, and its query) as next=... of ``href``, so
  // sign-in comes back here; the prefix is added again by the login page.
  function withNext(href) {
    var prefix = "/";
    try {
      var config = JSON.parse(document.getElementById("_dash-config").textContent);
      prefix = config.requests_pathname_prefix || "/";
    } catch (e) { /* no config: the app is at the root */ }
    var path = window.location.pathname;
    if (path.indexOf(prefix) === 0) { path = "/" + path.slice(prefix.length); }
    var here = path + window.location.search;
    if (here.indexOf("/login") === 0) { return href; }
    return href + (href.indexOf("?") < 0 ? "?" : "&") + "next=" + encodeURIComponent(here);
  }

  function follow(marker) {
    if (marker.dataset.followed) { return; }
    marker.dataset.followed = "1";
    var href = marker.getAttribute("data-href");
    if (!href) { return; }
    if (marker.getAttribute("data-come-back") === "1") { href = withNext(href); }
    if (marker.getAttribute("data-clear-auth") === "1") {
      try {
        window.sessionStorage.removeItem(AUTH_KEY);
        window.sessionStorage.removeItem(AUTH_KEY + "-timestamp");
      } catch (e) { /* storage may be disabled; the full reload below still drops the in-memory token */ }
      window.location.assign(href);
      return;
    }
    // Same navigation as dcc.Link: push the URL and let Dash's router render the page without a reload.
    window.history.pushState({}, "", href);
    window.dispatchEvent(new CustomEvent("_dashprivate_pushstate"));
    window.scrollTo(0, 0);
  }

  var chartsRequested = false;
  function preloadCharts() {
    if (chartsRequested || window.Plotly || !window._dashPlotlyJSURL) { return; }
    chartsRequested = true;
    var load = function () {
      if (window.Plotly) { return; }
      var script = document.createElement("script");
      script.src = window._dashPlotlyJSURL;
      script.async = true;
      document.body.appendChild(script);
    };
    if (window.requestIdleCallback) { window.requestIdleCallback(load, { timeout: 3000 }); } else { setTimeout(load, 1000); }
  }

  function scan(root) {
    if (!root || !root.querySelectorAll) { return; }
    if ((root.matches && root.matches(".preload-charts")) || root.querySelector(".preload-charts")) { preloadCharts(); }
    if (root.matches && root.matches(".redirect[data-href]")) { follow(root); }
    root.querySelectorAll(".redirect[data-href]").forEach(follow);
  }

  // Escape closes an open dialog through its own Cancel button (so the dashboard's callbacks see it).
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") { return; }
    var dialogs = document.querySelectorAll(".modal-backdrop:not([hidden])");
    if (!dialogs.length) { return; }
    var dismiss = dialogs[dialogs.length - 1].querySelector("[data-dismiss]");
    if (dismiss) { dismiss.click(); }
  });

  var NAV_TOGGLE = "frame-nav-toggle";
  function setExpanded(button, open) { button.setAttribute("aria-expanded", open ? "true" : "false"); }
  function menuButton() { return document.getElementById(NAV_TOGGLE); }
  function closeMenu(focus) {
    var button = menuButton();
    if (!button || button.getAttribute("aria-expanded") !== "true") { return; }
    setExpanded(button, false);
    if (focus) { button.focus(); }
  }
  document.addEventListener("click", function (event) {
    var target = event.target && event.target.closest ? event.target : null;
    if (!target) { return; }
    var button = target.closest("#" + NAV_TOGGLE + ", .controls-toggle");
    if (button) {
      setExpanded(button, button.getAttribute("aria-expanded") !== "true");
      return;
    }
    var toggle = menuButton();
    var menu = toggle ? document.getElementById(toggle.getAttribute("aria-controls")) : null;
    // A page link, sign-out, or a click outside the open menu shuts it.
    if (!menu || !menu.contains(target) || target.closest("a[href], #frame-sign-out")) { closeMenu(false); }
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") { closeMenu(true); }
  });
  window.addEventListener("popstate", function () { closeMenu(false); });
  window.addEventListener("_dashprivate_pushstate", function () { closeMenu(false); });

  var unsaved = false;
  var LEAVE_QUESTION = "You have unsaved changes on this page. Leave without saving them?";
  function guarded() { return document.querySelector("[data-unsaved-guard]"); }
  function edited(event) {
    var target = event.target;
    if (!target || !target.closest) { return; }
    // The delete-site confirmation is not a setting.
    if (target.closest("[data-unsaved-guard]") && !target.closest(".card-danger")) { unsaved = true; }
  }
  document.addEventListener("input", edited, true);
  document.addEventListener("change", edited, true);
  document.addEventListener("click", function (event) {
    var target = event.target && event.target.closest ? event.target : null;
    if (!target) { return; }
    if (target.closest("[data-saves]")) { unsaved = false; return; }
    var link = target.closest("a[href]");
    if (!link || !unsaved || !guarded()) { return; }
    if (window.confirm(LEAVE_QUESTION)) { unsaved = false; return; }
    // Stay: stop the click before Dash's router sees it.
    event.preventDefault();
    event.stopImmediatePropagation();
  }, true);
  window.addEventListener("beforeunload", function (event) {
    if (unsaved && guarded()) { event.preventDefault(); event.returnValue = ""; }
  });

  function start() {
    scan(document.body);
    new MutationObserver(function (mutations) {
      mutations.forEach(function (m) { m.addedNodes.forEach(scan); });
    }).observe(document.body, { childList: true, subtree: true });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
