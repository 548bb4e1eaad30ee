"""The sitelens service in one process: the API (``api_backend``) with the dashboard (``dashboard``) beside it.

The only package that imports both: ``sitelens.mount`` mounts the dashboard at ``/`` of the API app and
``sitelens.cli`` is the ``sitelens`` command. ``api_backend`` never imports ``dashboard`` and ``dashboard`` never
imports ``api_backend``: the dashboard reads the API over HTTP through ``api_client``, like any other client.
"""
