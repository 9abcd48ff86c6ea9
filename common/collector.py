"""Pausing Python's cyclic garbage collector around bulk work."""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused(pause: bool = True) -> Iterator[None]:
    """The cyclic garbage collector off for the block (when `pause`), back on after it if it was on.

    For bulk work that allocates ~10^4-10^5 small objects which all stay alive until written (a variant
    batch, an instant backend's prediction batch): the collector's passes over them find nothing and took
    a tenth to a half of that work's time. The block must not make reference cycles in bulk; what it frees
    is freed by reference counting. Process-wide: another thread's allocations go uncollected meanwhile."""
    enabled = pause and gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def freeze_startup() -> None:
    """What start-up loaded (every app, the URLconf and so every view module) lives as long as the process:
    import the URLconf, collect once, and move every object tracked so far into the collector's permanent
    generation, so that its full passes skip them. Without it a full pass walked every one of them: 200-300 ms
    pauses once every few dozen requests at the paper's scale (docs/benchmarks.md). Called by medr2/wsgi.py
    once the application is set up, and by the page benchmarks before they time requests, as the served
    process would have."""
    from django.urls import get_resolver

    get_resolver().check()   # imports the URLconf and every view module
    gc.collect()
    gc.freeze()
