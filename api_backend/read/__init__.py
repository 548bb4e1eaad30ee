"""The read side's one stateful layer: ``EventReader`` runs the pure builders of ``api_backend.query``.

    route (parse, authorise) -> query builder (pure: scope in, ``Query`` out) -> ``EventReader`` -> event store

The reader owns what the builders must not: the store's dialect (which builders are given and which binds the
placeholders), execution, the result cache (``results.py``), the goals rollup (``rollups.py``), waiting for
acknowledged events to be visible (the store it reads is the writer's ``VisibleEventStore``) and turning engine
errors into the API's errors.
"""

from api_backend.read.reader import EventReader

__all__ = ["EventReader"]
