"""``sitelens serve`` sets the objects built at start-up aside from the cyclic collector; later garbage still goes."""

from __future__ import annotations

import gc
import weakref

from api_backend.app import create_app
from api_backend.services import Services
from api_backend.serving import set_start_up_heap_aside
from api_backend.settings import Settings


class _Node:
    """A container that can refer to itself: only the cyclic collector frees it."""

    me: _Node | None = None


def test_heap001_start_up_objects_are_set_aside_and_later_cycles_are_still_collected(
    settings: Settings, services: Services
) -> None:
    app = create_app(settings, services)
    before = gc.get_freeze_count()
    try:
        assert any(obj is app for obj in gc.get_objects())
        set_start_up_heap_aside()
        # The app built before the call is among the objects the collector no longer walks.
        assert gc.get_freeze_count() > before
        assert not any(obj is app for obj in gc.get_objects())
        node = _Node()
        node.me = node
        gone = weakref.ref(node)
        del node
        gc.collect()
        assert gone() is None
    finally:
        gc.unfreeze()
