"""One module per dashboard page (``dash.register_page``); Dash imports them when the app is built."""
