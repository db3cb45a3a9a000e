"""The `orch` console script: stop signals are handled before anything else is imported, so that a Ctrl-C or
SIGTERM that lands while Python loads the commands ends orch with the signal's code and one line, not a
traceback."""

from __future__ import annotations

import sys


def main() -> None:
    try:  # on a cold machine (no bytecode cached yet) even this import takes long enough for a Ctrl-C to land in it
        import signal

        from orchestrator import stops
    except KeyboardInterrupt:
        sys.stderr.write("orch: interrupted (SIGINT)\n")
        sys.exit(130)

    try:
        with stops.on_signals(leaving=True):  # the command over, a signal cannot end Python's shutdown
            stops.hold_stops_in_native_imports()
            try:
                from orchestrator.cli import main as cli

                cli()
            except KeyboardInterrupt:  # before a command started (importing, parsing options)
                sys.stderr.write(f"orch: interrupted ({stops.signal_name() or 'SIGINT'})\n")
                sys.exit(stops.exit_code())
            except SystemExit as done:
                # click turns a stop that lands while it parses into "Aborted!" and exit 1: the stop's code instead.
                if done.code == 1 and stops.signal_name():
                    sys.stderr.write(f"orch: interrupted ({stops.signal_name()})\n")
                    sys.exit(stops.exit_code())
                raise
    finally:
        # The command is over, its exit status decided: a signal now would only end Python's own shutdown by the
        # signal's default action (a shell's -2) instead of that status.
        for sig in stops.SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
