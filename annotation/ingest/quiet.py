"""Keep third-party decoders from writing to the console while a file is decoded.

pydicom logs every failed decoding plugin with ``LOGGER.exception`` (a full traceback at
ERROR level, which the project's root handler prints), and pydicom, nibabel and Pillow warn
about odd values, sometimes quoting them (a UID, a name): neither may reach the logs of an
import.  Inside `quiet_libraries()` the records of those libraries' loggers are dropped and
warnings are ignored; what went wrong reaches the caller as the exception the decoder raises,
which `annotation.ingest.decode` turns into an `IngestError` with a code and a short message.

Only the thread doing the decoding is silenced: other threads keep their library logs.
"""
from __future__ import annotations

import contextlib
import logging
import threading
import warnings
from collections.abc import Iterator

#: top-level names of the libraries silenced during a decode
LIBRARIES = ("pydicom", "pylibjpeg", "openjpeg", "libjpeg", "rle", "nibabel", "PIL")

_state = threading.local()


class _DuringDecode(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(_state, "depth", 0)


_FILTER = _DuringDecode()


def _install() -> None:
    """Attach the filter to every logger of `LIBRARIES` (logger filters are not inherited).  Importing
    `pydicom.pixels` first creates the loggers of pydicom's decoders and of its plugins."""
    import pydicom.pixels  # noqa: F401

    for name in list(logging.root.manager.loggerDict):
        if name.split(".")[0] in LIBRARIES:
            logger = logging.getLogger(name)
            if _FILTER not in logger.filters:
                logger.addFilter(_FILTER)


@contextlib.contextmanager
def quiet_libraries() -> Iterator[None]:
    _install()
    _state.depth = getattr(_state, "depth", 0) + 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        _state.depth -= 1
