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
