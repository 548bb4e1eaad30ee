/*
 * sitelens browser tracker.
 *
 *   <script defer src="https://analytics.example.com/api/script.js" data-site-id="1"></script>
 *
 * Sends page views (including single-page-app navigation), outbound link clicks, JavaScript errors and
 * custom events (window.sitelens.event(name, props)) to the /api/track route of the server it was loaded
 * from, in the same body @rybbit/js sends. The site's tracking config (/api/site/tracking-config/:id)
 * decides what is tracked, read the way @rybbit/js reads it.
 */
(function () {
  "use strict";
  var script = document.currentScript;
  if (!script || window.sitelens) return;
  var siteId = script.getAttribute("data-site-id");
  if (!siteId) return;
  var host = script.src.replace(/\/script\.js(\?.*)?$/, "");
  var config = {
    trackInitialPageView: true,
    trackSpaNavigation: true,
    trackUrlParams: true,
    trackOutbound: true,
    trackErrors: false,
  };
  var ready = false;
  var queue = [];
  var lastPath = null;
  var userId = null;
  try {
    userId = localStorage.getItem("sitelens-user-id");
  } catch (e) {
    /* storage blocked: track without an identified user */
  }

  function path() {
    return location.pathname + (location.hash || "");
  }

  function send(type, extra) {
    if (!ready) {
      queue.push([type, extra]);
      return;
    }
    var body = {
      site_id: siteId,
      type: type,
      hostname: location.hostname,
      pathname: path(),
      querystring: config.trackUrlParams ? location.search : "",
      screenWidth: screen.width,
      screenHeight: screen.height,
      language: navigator.language,
      page_title: document.title,
      referrer: document.referrer,
    };
    for (var key in extra) body[key] = extra[key];
    if (userId) body.user_id = userId;
    var text = JSON.stringify(body);
    var url = host + "/track";
    // sendBeacon survives the page unloading (an outbound click). A text/plain body needs no CORS preflight
    // (the server reads it as JSON); fetch with keepalive is the fallback.
    if (!(navigator.sendBeacon && navigator.sendBeacon(url, new Blob([text], { type: "text/plain" })))) {
      fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body: text, keepalive: true })
        .catch(function () {});
    }
  }

  function pageview() {
    var current = path() + location.search;
    if (current === lastPath) return; // replaceState with the same URL is not a new page
    lastPath = current;
    send("pageview", {});
  }

  function event(name, props) {
    if (!name || typeof name !== "string") return;
    var extra = { event_name: name };
    if (props && typeof props === "object" && Object.keys(props).length) extra.properties = JSON.stringify(props);
    send("custom_event", extra);
  }

  function trackError(name, message, stack, extra) {
    var props = { message: String(message || "Unknown error").slice(0, 500) };
    if (stack) props.stack = String(stack).slice(0, 2000);
    for (var key in extra) if (extra[key]) props[key] = extra[key];
    send("error", { event_name: name || "Error", properties: JSON.stringify(props) });
  }

  function onClick(e) {
    if (!config.trackOutbound || !(e.target instanceof Element)) return;
    var link = e.target.closest("a");
    if (!link || !link.href) return;
    var target;
    try {
      target = new URL(link.href, location.href);
    } catch (err) {
      return;
    }
    if (!/^https?:$/.test(target.protocol) || target.hostname === location.hostname) return;
    var text = (link.innerText || link.textContent || "").trim().slice(0, 500);
    send("outbound", { properties: JSON.stringify({ url: link.href, text: text, target: link.target || "_self" }) });
  }

  function start() {
    ready = true;
    if (config.trackInitialPageView) pageview();
    if (config.trackSpaNavigation) {
      ["pushState", "replaceState"].forEach(function (name) {
        var original = history[name];
        history[name] = function () {
          var result = original.apply(this, arguments);
          pageview();
          return result;
        };
      });
      window.addEventListener("popstate", pageview);
      window.addEventListener("hashchange", pageview);
    }
    document.addEventListener("click", onClick, true);
    if (config.trackErrors) {
      window.addEventListener("error", function (e) {
        var error = e.error || {};
        var where = { fileName: e.filename, lineNumber: e.lineno, columnNumber: e.colno };
        trackError(error.name, error.message || e.message, error.stack, where);
      });
      window.addEventListener("unhandledrejection", function (e) {
        var reason = e.reason;
        if (reason instanceof Error) trackError("UnhandledRejection", reason.message, reason.stack, {});
        else trackError("UnhandledRejection", typeof reason === "string" ? reason : JSON.stringify(reason), "", {});
      });
    }
    var pending = queue;
    queue = [];
    pending.forEach(function (item) {
      send(item[0], item[1]);
    });
  }

  window.sitelens = {
    event: event,
    pageview: function () {
      lastPath = null;
      pageview();
    },
    identify: function (id) {
      userId = id ? String(id) : null;
      try {
        if (userId) localStorage.setItem("sitelens-user-id", userId);
        else localStorage.removeItem("sitelens-user-id");
      } catch (e) {
        /* storage blocked: the id lasts for this page only */
      }
    },
  };

  // The server's switches win over the defaults; without an answer (offline, 404) the defaults apply.
  fetch(host + "/site/tracking-config/" + encodeURIComponent(siteId))
    .then(function (response) {
      return response.ok ? response.json() : {};
    })
    .catch(function () {
      return {};
    })
    .then(function (remote) {
      for (var key in config) if (typeof remote[key] === "boolean") config[key] = remote[key];
      start();
    });
})();
