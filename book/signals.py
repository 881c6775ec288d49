"""SIGTERM as Ctrl-C: the build and the preview server both clean up on either.

>>> with terminate_cleanly():
...     pass
"""

from __future__ import annotations

import contextlib
import signal
import threading


@contextlib.contextmanager
def terminate_cleanly():
    """SIGTERM raises KeyboardInterrupt inside the block, so its cleanup (a staging or temporary
    folder removed) runs as it does after Ctrl-C; outside the main thread it changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
