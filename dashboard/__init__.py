"""sitelens dashboard: a Dash app that reads everything through ``api_client``."""
