"""Stopping orch on any signal a user or a system sends, cleanly: Ctrl-C (SIGINT), SIGTERM (kill, systemd, a CI
timeout) and SIGHUP (a closed terminal) all stop it the same way, and it exits with the shell's code for that
signal (128 + its number: 130, 143, 129). A signal orch was started with ignored (`nohup`) stays ignored.

    with on_signals():      # the entry point wraps every command in this
        ...                 # the first signal raises KeyboardInterrupt(its name); later ones are acknowledged
    with held():            # a write to the results file: a signal that lands here is raised when it ends
        ...

Why held: a KeyboardInterrupt raised while DuckDB executes is turned by DuckDB into its own error ("Query
interrupted"): a run was stored `failed` and orch exited 1 with a traceback (found by benchmarks/reliability.py,
SIGTERM trials). Inside a write the stop waits for the write's end, so rows are stored whole and the stop is never
mistaken for a failure. After a stop, `signal_name()` says which one: whatever error follows it is its consequence
and is reported as the stop.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.machinery import ExtensionFileLoader, PathFinder

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_depth = 0  # nested held() blocks
_deferred: str | None = None  # a stop raised when the outermost held block ends
_first: str | None = None  # the first stop signal this process received


def holding() -> bool:
    return _depth > 0


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


def signal_name() -> str | None:
    """The stop signal this process received first (SIGINT, SIGTERM, SIGHUP), if any."""
    return _first


def exit_code(name: str | None = None) -> int:
    """The shell's exit code for a stop by this signal (default: the one received, else SIGINT): 128 + number."""
    return 128 + int(getattr(signal, name or _first or "SIGINT", signal.SIGINT))


class _Stopper:
    def __init__(self) -> None:
        self.first: str | None = None
        self.told = False
        self.lost = False  # the KeyboardInterrupt landed where Python ignores exceptions (a weakref callback)

    def __call__(self, signum, frame) -> None:
        global _first, _deferred
        if self.first is None:
            self.first = signal.Signals(signum).name
            _first = _first or self.first
            if holding():  # in a write to the results file: raised as the write ends
                _deferred = _deferred or self.first
                return
            raise KeyboardInterrupt(self.first)
        if not self.told:
            self.told = True
            sys.stderr.write(f"orch: {signal.Signals(signum).name}: already stopping, storing what ran (a moment)\n")


_active: list[_Stopper] = []


@contextmanager
def on_signals(leaving: bool = False) -> Iterator[_Stopper]:
    """Within: SIGINT, SIGTERM and SIGHUP raise one KeyboardInterrupt; later ones are acknowledged, not raised.
    After a stop they stay ignored: orch is on its way out. `leaving` (the console script's block, entry.py): they
    stay ignored after it whatever happened, so none lands between this block's end and Python's."""
    global _first
    if not _active:  # the outermost: a new command, whatever an earlier one in this process received
        _first = None
    stopper = _Stopper()
    # A signal ignored when orch started stays ignored: `nohup orch run ...` must outlive its terminal, and a job
    # started with `&` by a script ignores Ctrl-C meant for the foreground (the convention Python keeps for SIGINT).
    previous = {sig: signal.signal(sig, stopper) for sig in SIGNALS if signal.getsignal(sig) is not signal.SIG_IGN}
    previous_hook = sys.unraisablehook

    def unraisable(info) -> None:
        # A signal that lands in a finalizer or weakref callback raises where Python only prints: keep it quiet
        # and let check() deliver it at the next safe point.
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
            # Any stop, this block's or an inner one's (the entry point's block holds the command's).
            signal.signal(sig, signal.SIG_IGN if leaving or stopper.first or _first else handler)


def check() -> None:
    """At a safe point (between runs): raise the stop a signal asked for if its KeyboardInterrupt was swallowed."""
    for stopper in _active:
        if stopper.lost:
            stopper.lost = False
            raise KeyboardInterrupt(stopper.first)


class _HeldExtensionLoader(ExtensionFileLoader):
    """Loads a native extension with a stop held until its initialisation ends. DuckDB's (nanobind) runs Python
    code while it initialises; a KeyboardInterrupt raised there is a "Critical nanobind error" and an abort (exit
    -6 and a traceback: 1 Ctrl-C in 150 landing while `orch repair` started, found by test_bad_input)."""

    def create_module(self, spec):
        with held():
            return super().create_module(spec)

    def exec_module(self, module):
        with held():
            super().exec_module(module)


class _HeldExtensionFinder:
    """Finds what the path finder finds; a native extension gets the loader above."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        spec = PathFinder.find_spec(name, path, target)
        if spec is not None and type(spec.loader) is ExtensionFileLoader:
            spec.loader = _HeldExtensionLoader(spec.loader.name, spec.loader.path)
        return spec


def hold_stops_in_native_imports() -> None:
    """From now on a stop that lands while a native extension initialises is raised once it has (the entry point
    calls this before the commands import DuckDB, matplotlib, scipy). Before the path finder: builtin and frozen
    modules are found as before."""
    if any(isinstance(f, _HeldExtensionFinder) for f in sys.meta_path):
        return
    at = next((i for i, f in enumerate(sys.meta_path) if f is PathFinder), len(sys.meta_path))
    sys.meta_path.insert(at, _HeldExtensionFinder())
