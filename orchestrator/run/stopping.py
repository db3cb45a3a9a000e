"""Stopping a sweep on any signal a user or a system sends: Ctrl-C, SIGTERM (kill, systemd, a CI timeout) and
SIGHUP (a closed terminal or SSH session) all stop it the same way, unless orch was started with that signal
ignored (`nohup`), which it then keeps ignoring.

The first signal raises KeyboardInterrupt in the main thread, where the sweep stores the run in flight as
interrupted and ends the sweep. Every later signal is only acknowledged: a second Ctrl-C while that is being
written must not cut it short (a traceback, or a row left `running` or labelled `failed`).
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from orchestrator import interrupts

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _Stopper:
    def __init__(self) -> None:
        self.first: str | None = None
        self.told = False
        self.lost = False  # the KeyboardInterrupt landed where Python ignores exceptions (a weakref callback)

    def __call__(self, signum, frame) -> None:
        if self.first is None:
            self.first = signal.Signals(signum).name
            if interrupts.holding():  # in a write to the results file: raised as the write ends
                interrupts.defer(self.first)
                return
            raise KeyboardInterrupt(self.first)
        if not self.told:
            self.told = True
            sys.stderr.write(f"orch: {signal.Signals(signum).name}: already stopping, storing what ran (a moment)\n")


_active: list[_Stopper] = []


@contextmanager
def stop_on_signals() -> Iterator[_Stopper]:
    """Within: SIGINT, SIGTERM and SIGHUP raise one KeyboardInterrupt; later ones are acknowledged, not raised.
    After a stop they stay ignored: orch is on its way out."""
    stopper = _Stopper()
    # A signal ignored when orch started stays ignored: `nohup orch run ...` must outlive its terminal, and a job
    # started with `&` by a script ignores Ctrl-C meant for the foreground (the convention Python keeps for SIGINT).
    previous = {sig: signal.signal(sig, stopper) for sig in SIGNALS if signal.getsignal(sig) is not signal.SIG_IGN}
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
        for sig, handler in previous.items():
            # Once stopping, later signals are ignored rather than handled in Python: Python resets its own
            # handlers while it finalizes, and a second Ctrl-C then would end orch by the default action (exit -2
            # instead of 130) after everything is stored.
            signal.signal(sig, signal.SIG_IGN if stopper.first else handler)


def check() -> None:
    """Between runs: raise the stop a signal asked for if its KeyboardInterrupt was swallowed on the way."""
    for stopper in _active:
        if stopper.lost:
            stopper.lost = False
            raise KeyboardInterrupt(stopper.first)
