"""Stops held back while the results file is being written: a signal that lands in a write is delivered when the
write ends, so a run's rows are stored whole and the stop is never mistaken for a failure.

Without this, a KeyboardInterrupt raised (by run/stopping's handler) while DuckDB executes is turned by DuckDB
into a RuntimeError ("Query interrupted"): the run was stored `failed`, the sweep `failed`, and orch exited 1 with a
traceback (found by benchmarks/reliability.py, SIGTERM trials). The handler asks `holding()` and, inside a write,
calls `defer()` instead of raising; `held()` raises the stop as the write's block ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

_depth = 0
_deferred: str | None = None


def holding() -> bool:
    return _depth > 0


def defer(name: str) -> None:
    """A stop (the signal's name) to raise as KeyboardInterrupt when the outermost held block ends."""
    global _deferred
    _deferred = _deferred or name


@contextmanager
def held() -> Iterator[None]:
    global _depth, _deferred
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _deferred:
            name, _deferred = _deferred, None
            raise KeyboardInterrupt(name)
