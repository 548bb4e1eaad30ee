/*
 * sitelens dashboard: light or dark.
 * With nothing chosen the page follows the system (the CSS reads prefers-color-scheme). The navbar switch
 * (data-theme-toggle) chooses one, kept in localStorage and set as data-theme on <html>; this runs before Dash draws
 * the page, so a chosen theme shows from the first frame. Charts take their paper, grid and text colours from the
 * same custom properties, set again whenever the theme changes or a chart is drawn.
 */
(function () {
  "use strict";
  var KEY = "sitelens-theme";
  var root = document.documentElement;
  var systemDark = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

  function stored() {
    try {
      var value = window.localStorage.getItem(KEY);
      return value === "dark" || value === "light" ? value : null;
    } catch (e) { return null; }  // storage may be disabled: follow the system
  }

  function isDark() {
    var chosen = root.getAttribute("data-theme");
    if (chosen) { return chosen === "dark"; }
    return !!(systemDark && systemDark.matches);
  }

  var chosen = stored();
  if (chosen) { root.setAttribute("data-theme", chosen); }

  function colour(name) { return window.getComputedStyle(root).getPropertyValue(name).trim(); }

  function chartColours() {
    return { paper: colour("--surface"), text: colour("--text-muted"), grid: colour("--chart-grid"), line: colour("--border") };
  }

  function themed(gd, c) {
    var layout = gd.layout || {};
    return layout.paper_bgcolor === c.paper && layout.font && layout.font.color === c.text;
  }

  function paint(gd) {
    if (!window.Plotly || !gd._fullLayout) { return; }
    var c = chartColours();
    if (themed(gd, c)) { return; }
    var update = {
      paper_bgcolor: c.paper,
      plot_bgcolor: "rgba(0,0,0,0)",
      "font.color": c.text,
      "legend.font.color": c.text,
      "hoverlabel.bgcolor": c.paper,
      "hoverlabel.font.color": colour("--text"),
      "hoverlabel.bordercolor": c.line
    };
    Object.keys(gd._fullLayout).forEach(function (name) {
      if (/^[xy]axis\d*$/.test(name)) {
        update[name + ".gridcolor"] = c.grid;
        update[name + ".linecolor"] = c.line;
        update[name + ".zerolinecolor"] = c.line;
      }
      if (/^geo\d*$/.test(name)) {
        update[name + ".bgcolor"] = "rgba(0,0,0,0)";
        update[name + ".landcolor"] = colour("--surface-2");
        update[name + ".subunitcolor"] = c.line;
        update[name + ".countrycolor"] = c.line;
        update[name + ".coastlinecolor"] = c.line;
      }
    });
    window.Plotly.relayout(gd, update);
  }

  function hook(gd) {
    if (gd._sitelensTheme || typeof gd.on !== "function") { return; }
    gd._sitelensTheme = true;
    // Dash redraws a chart from its figure (Plotly.react), which brings the figure's own colours back.
    gd.on("plotly_afterplot", function () { window.requestAnimationFrame(function () { paint(gd); }); });
    paint(gd);
  }

  function paintAll() {
    document.querySelectorAll(".js-plotly-plot").forEach(function (gd) { hook(gd); paint(gd); });
  }

  function showSwitch() {
    var dark = isDark();
    document.querySelectorAll("[data-theme-toggle]").forEach(function (button) {
      button.setAttribute("aria-pressed", dark ? "true" : "false");
    });
  }

  function choose(theme) {
    root.setAttribute("data-theme", theme);
    try { window.localStorage.setItem(KEY, theme); } catch (e) { /* kept for this page only */ }
    showSwitch();
    paintAll();
  }

  document.addEventListener("click", function (event) {
    var button = event.target && event.target.closest ? event.target.closest("[data-theme-toggle]") : null;
    if (button) { choose(isDark() ? "light" : "dark"); }
  });
  if (systemDark && systemDark.addEventListener) {
    systemDark.addEventListener("change", function () { showSwitch(); paintAll(); });
  }

  function start() {
    showSwitch();
    paintAll();
    new MutationObserver(function (mutations) {
      for (var i = 0; i < mutations.length; i++) {
        var m = mutations[i];
        if (m.type === "attributes") {
          if (m.target.classList && m.target.classList.contains("js-plotly-plot")) { hook(m.target); }
        } else {
          for (var j = 0; j < m.addedNodes.length; j++) {
            var node = m.addedNodes[j];
            if (node.nodeType !== 1) { continue; }
            if (node.matches("[data-theme-toggle]") || node.querySelector("[data-theme-toggle]")) { showSwitch(); }
            if (node.matches(".js-plotly-plot")) { hook(node); }
            node.querySelectorAll(".js-plotly-plot").forEach(hook);
          }
        }
      }
    }).observe(document.body, { childList: true, subtree: true, attributes: true, attributeFilter: ["class"] });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
