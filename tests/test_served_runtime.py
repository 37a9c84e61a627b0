"""What the server process does for a class: the cycle collector's full passes kept short
(``runtime.freeze_heap_soon``) while a closed session's reference cycles are still freed
(``runtime.release_memory_soon``)."""

import asyncio
import gc
import weakref

import pytest

from aggmrf_explore.explorer.server import runtime


class Cycle:
    """An object that only the cycle collector can free (it refers to itself)."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def quick(monkeypatch):
    monkeypatch.setattr(runtime, "FREEZE_DELAY", 0.05)
    monkeypatch.setattr(runtime, "RELEASE_DELAY", 0.05)
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_objects_alive_after_a_page_is_built_leave_the_collectors_scans(quick):
    async def scenario():
        kept = [Cycle() for _ in range(1000)]
        runtime.freeze_heap_soon()
        runtime.freeze_heap_soon()  # a second page meanwhile: still one freeze
        assert gc.get_freeze_count() == 0  # not before FREEZE_DELAY
        await asyncio.sleep(0.2)
        return kept

    kept = asyncio.run(scenario())
    frozen = gc.get_freeze_count()
    assert frozen >= 1000
    # a full pass now scans only what was made since: fewer objects than were frozen
    assert len(gc.get_objects()) < frozen
    del kept


def test_a_closed_sessions_frozen_cycles_are_freed_by_the_release(quick):
    async def scenario():
        obj = Cycle()
        ref = weakref.ref(obj)
        runtime.freeze_heap_soon()
        await asyncio.sleep(0.2)
        assert gc.is_tracked(obj) and gc.get_freeze_count() > 0
        del obj
        gc.collect()
        assert ref() is not None  # frozen: the collector leaves its cycle alone
        runtime.release_memory_soon()  # a session closed
        await asyncio.sleep(0.2)
        return ref

    ref = asyncio.run(scenario())
    assert ref() is None
    assert gc.get_freeze_count() > 0  # what still lives is frozen again
