"""Long steps (a compile, a download) shown while they run: one updating line on a terminal, a plain line every
`every` seconds (and at milestones) elsewhere, and the step's total time when it ends, however it ends."""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Callable

from orchestrator.tables import clock

EVERY_S = 15.0  # a plain line at least this often in a log, so a long step visibly lives
REFRESH_S = 0.5


def rewrite(stream, text: str) -> None:
    """Back to the line's start, then `text`. The carriage return goes to the stream under orch's inert wrapper
    (cli/output.InertStream strips every CR from text, which could hide what a line said); the text goes through it."""
    getattr(stream, "underlying", stream).write("\r")
    stream.write(text)


class StatusLine:
    """One line of status on `stream`: rewritten in place on a terminal, printed as lines elsewhere."""

    def __init__(self, stream=None, tty: bool | None = None, every: float = EVERY_S, now=time.monotonic):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.every, self.now = every, now
        self.last_printed = now()  # not at once: the step's caller has just said what starts
        self.width = 0

    def show(self, text: str, *, milestone: bool = False) -> None:
        """The current state; off a terminal printed only at a milestone or after `every` seconds of silence."""
        if self.tty:
            self._rewrite(text)
        elif milestone or self.now() - self.last_printed >= self.every:
            self._print(text)

    def finish(self, text: str) -> None:
        """The last word on a step: stays on screen."""
        if self.tty:
            self._rewrite(text)
            self.stream.write("\n")
            self.stream.flush()
            self.width = 0
        else:
            self._print(text)

    def _rewrite(self, text: str) -> None:
        columns = shutil.get_terminal_size((100, 24)).columns
        text = text[: columns - 1]  # a wrapped line cannot be rewritten in place
        rewrite(self.stream, text + " " * max(0, self.width - len(text)))
        self.stream.flush()
        self.width = len(text)

    def _print(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()
        self.last_printed = self.now()


class Phase:
    """`with Phase("compile", status, poll=...):` shows the phase with its elapsed time while the block runs.

    `poll(elapsed, final)` (called from a helper thread every REFRESH_S seconds with final=False, and once with
    final=True at the end) returns (detail, milestone): text to show after the elapsed time, and whether it is worth a line
    of its own in a log. On exit the phase prints its total time: "done in", or "stopped after" when the block
    raised (an error, Ctrl-C).
    """

    def __init__(
        self,
        label: str,
        status: StatusLine,
        poll: Callable[[float, bool], tuple[str, bool]] | None = None,
        now=time.monotonic,
    ):
        self.label, self.status, self.poll, self.now = label, status, poll, now
        self.detail = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"phase-{label}")

    def __enter__(self) -> Phase:
        self.start = self.now()
        self._thread.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._stop.set()
        self._thread.join()
        self.elapsed = self.now() - self.start
        if self.poll:
            self.detail, _ = self.poll(self.elapsed, True)
        ended = f"done in {clock(self.elapsed)}" if exc_type is None else f"stopped after {clock(self.elapsed)}"
        self.status.finish(f"orch: {self.label} {ended}{self.detail}")

    def _run(self) -> None:
        while not self._stop.wait(REFRESH_S):
            elapsed, milestone = self.now() - self.start, False
            if self.poll:
                self.detail, milestone = self.poll(elapsed, False)
            self.status.show(f"orch: {self.label} {clock(elapsed)}{self.detail}", milestone=milestone)
