"""Stopping a sweep on any signal a user or a system sends: Ctrl-C, SIGTERM (kill, systemd, a CI timeout) and
SIGHUP (a closed terminal or SSH session) all stop it the same way.

The first signal raises KeyboardInterrupt in the main thread, where the sweep stores the run in flight as
interrupted and ends the sweep. Every later signal is only acknowledged: a second Ctrl-C while that is being
written must not cut it short (a traceback, or a row left `running` or labelled `failed`).
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _Stopper:
    def __init__(self) -> None:
        self.first: str | None = None
        self.told = False
        self.lost = False  # the KeyboardInterrupt landed where Python ignores exceptions (a weakref callback)
        self.closed = False  # the work it guarded is over: nothing is left to stop, signals are only acknowledged

    def __call__(self, signum, frame) -> None:
        if self.first is None and not self.closed:
            self.first = signal.Signals(signum).name
            raise KeyboardInterrupt(self.first)
        if not self.told:
            self.told = True
            what = "already stopping, storing what ran (a moment)" if self.first else "everything is stored; exiting"
            sys.stderr.write(f"orch: {signal.Signals(signum).name}: {what}\n")


_active: list[_Stopper] = []


@contextmanager
def stop_on_signals(*, until_exit: bool = False) -> Iterator[_Stopper]:
    """Within: SIGINT, SIGTERM and SIGHUP raise one KeyboardInterrupt; later ones are acknowledged, not raised.

    until_exit: for a command that ends right after the block: its handlers stay, only acknowledging, so a
    signal in its last milliseconds (after everything is stored) cannot end it mid-exit by the default action.
    """
    stopper = _Stopper()
    previous = {sig: signal.signal(sig, stopper) for sig in SIGNALS}
    previous_hook = sys.unraisablehook

    def unraisable(info) -> None:
        # A signal that lands in a finalizer or weakref callback raises where Python only prints: keep it quiet
        # and let check() deliver it at the sweep's next safe point.
        if isinstance(info.exc_value, KeyboardInterrupt) and stopper.first:
            stopper.lost = True
            return
        previous_hook(info)

    sys.unraisablehook = unraisable
    _active.append(stopper)
    try:
        yield stopper
    finally:
        _active.remove(stopper)
        sys.unraisablehook = previous_hook
        stopper.closed = True
        if stopper.first is None and not until_exit:  # once stopping, later signals stay acknowledged until exit
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def check() -> None:
    """Between runs: raise the stop a signal asked for if its KeyboardInterrupt was swallowed on the way."""
    for stopper in _active:
        if stopper.lost:
            stopper.lost = False
            raise KeyboardInterrupt(stopper.first)
