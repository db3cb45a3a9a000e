"""A stop that lands while a native extension initialises (DuckDB's nanobind module runs Python code there, and an
exception raised in it aborts the process) waits for the initialisation to end, then stops orch as any stop does."""

import subprocess
import sys

import pytest

SCRIPT = """
import signal, sys
from importlib.machinery import ExtensionFileLoader
from orchestrator import stops

signal.signal(signal.SIGINT, signal.default_int_handler)  # as Python starts (an earlier test may leave it ignored)
original, said = ExtensionFileLoader.create_module, []

def interrupted(self, spec):  # a Ctrl-C lands as the extension starts to initialise
    if spec.name == "_bz2":
        signal.raise_signal(signal.SIGINT)
        said.append("initialised")
    return original(self, spec)

ExtensionFileLoader.create_module = interrupted
with stops.on_signals():
    if sys.argv[1] == "held":
        stops.hold_stops_in_native_imports()
    try:
        import bz2  # imports _bz2, a native extension of the standard library
    except KeyboardInterrupt as stop:
        said.append(f"stopped by {stop}")
print(", ".join(said))
"""


def _run(mode: str) -> str:
    res = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


@pytest.mark.integration  # a fresh interpreter each: _bz2 not yet imported
def test_a_stop_inside_a_native_extensions_initialisation_is_raised_once_it_has_ended():
    assert _run("held") == "initialised, stopped by SIGINT"
    assert _run("plain") == "stopped by SIGINT"  # without the hook: raised inside the initialisation
