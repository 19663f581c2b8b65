"""The cyclic garbage collector held off while a stage builds large, acyclic data.

Prepare on a change of a quarter of a million lines allocates millions of small objects that
live until the stage ends (syntax trees, index records, diff lines). Each allocation burst
makes the collector walk every object still alive, again and again: about a third of the
stage's CPU time, for cycles that these structures do not form (reference counting frees
them). The pause covers one stage and ends with it; cycles made meanwhile (the ORM's) are
collected as soon as it ends. Nested or concurrent pauses (steps on a thread pool) count: the
collector comes back when the last one ends, and only if it was on before the first.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
