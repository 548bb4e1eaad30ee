"""One module per dashboard page (``dash.register_page``); Dash imports them when the app is built.

How a page is put together (see ``goals.py`` for a complete one):

- ``dash.register_page(__name__, path="/goals", title="Goals · sitelens", nav_label="Goals", nav_scope="site",
  order=1)``: ``nav_label`` puts it in the navbar, ``nav_scope="site"`` shows it only once a site is chosen.
- ``layout(auth=None, share=None, browser_zone=None, **query)``: start with
  ``view, gate = page_gate(auth, browser_zone, "/goals", query)`` and return ``gate`` when it is not None (sign-in,
  waiting for the browser's zone, or choose a site). Then put ``analytics_frame(view)`` above the page's own content
  and wrap what callbacks fill in ``loading(None, ids.SOMETHING)``.
- Data callbacks take ``Input(ids.VIEW, "data")`` (``ViewState.from_dict``) and ``State(ids.AUTH, "data")``, call
  the API through ``session.cached_call(session.api_for(auth), "method", ...)`` and return ``error_view(exc)`` on
  ``APIError`` (an expired credential then goes to sign-in by itself).
- After a write, call ``session.invalidate(site_id)``. To move elsewhere, output to
  ``Output(ids.NAVIGATE, "href", allow_duplicate=True)`` with ``prevent_initial_call=True``.
- Never import another page module (Dash executes page modules itself); shared loaders live in ``session``.
"""
