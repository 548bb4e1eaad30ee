"""What goals and sites are: the rules a body must follow to become one, and the JSON object the API shows.

Pure functions over request bodies and stored records, with no I/O: routes validate here, then call the metadata
store (``api_backend.store.metadata``); ``api_backend.services`` only wires the stores and caches together.
"""
