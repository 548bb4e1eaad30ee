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
- After a write, call ``session.invalidate(site_id)``. To move elsewhere from a control of the page, output to
  ``Output(ids.FRAME_HREF, "data", allow_duplicate=True)`` with ``prevent_initial_call=True`` (a store inside the
  frame, so the callback does not fire when the page is drawn; the shell's ``ids.NAVIGATE`` would make it fire).
- Speed: Dash runs every callback whose output appears on a page unless ``prevent_initial_call``; each costs a round
  trip. A page can draw data the response cache already holds straight into its layout (``session.peek``,
  ``prefill.overview`` passed to ``analytics_frame(view, overview_body=...)``) and put a load store in the layout
  only when something is missing (the goals and errors pages show how: ``ids.GOALS_LOAD``). A load callback must
  have that store as its only Input: a callback with some inputs present and others missing is an error in Dash.
- Never import another page module (Dash executes page modules itself); shared loaders live in ``session``.
"""
