"""common.collector.collector_paused: off inside, restored after, also on an error."""
import gc

import pytest

from common.collector import collector_paused


def test_paused_inside_and_restored_after_even_on_error():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()
    with collector_paused(False):
        assert gc.isenabled()


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_freeze_startup_moves_what_is_loaded_out_of_full_collections():
    """What medr2/wsgi.py calls once the application is set up: the URLconf imported, everything tracked
    so far frozen (skipped by the collector's full passes)."""
    import sys

    from common.collector import freeze_startup

    gc.unfreeze()
    try:
        freeze_startup()
        assert gc.get_freeze_count() > 10_000          # Django, every app, every view module
        assert "medr2.urls" in sys.modules             # imported by the resolver's check
    finally:
        gc.unfreeze()
