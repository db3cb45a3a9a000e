"""Sweep progress: one updating line on a terminal (cut to its width, so the carriage return rewrites it whole),
plain lines otherwise (logs, CI, pipes), wrapped to 80 columns there and notes wrapped everywhere."""

from __future__ import annotations

import sys
import time

from orchestrator.long_step import rewrite
from orchestrator.tables import clock, fill, terminal_width


class Progress:
    def __init__(self, total: int, stream=None, tty: bool | None = None):
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.start = time.monotonic()
        self.width = 0

    def line(self, what: str) -> str:
        elapsed = time.monotonic() - self.start
        eta = elapsed / self.done * (self.total - self.done) if self.done else None
        times = f"{clock(elapsed)} elapsed" + (f", ETA {clock(eta)}" if eta is not None else "")
        return f"[{self.done}/{self.total}] {times} | {what}"

    def advance(self, what: str) -> None:
        """One run finished: what it did (arm, repeat, status, last decode tok/s and acceptance)."""
        self.done += 1
        text = self.line(what)
        if self.tty:
            room = terminal_width() - 1  # a line the terminal wraps could not be rewritten in place
            text = text if len(text) <= room else text[: room - 3] + "..."
            pad = max(0, self.width - len(text))
            rewrite(self.stream, text + " " * pad)
            self.width = len(text)
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(_without_orphan(text) + "\n")
        self.stream.flush()

    def note(self, message: str) -> None:
        """A message that must stay on screen (a skipped arm, a failure)."""
        if self.tty and self.width:
            rewrite(self.stream, " " * self.width)
            rewrite(self.stream, "")
        self.stream.write(fill(message) + "\n")
        self.stream.flush()
        self.width = 0


GLUE = "\x00"  # never in a progress line: holds its last two words on one line while wrapping


def _without_orphan(text: str) -> str:
    """The line wrapped to 80 columns, its last two words kept together ("run 54", never "54" alone on a line)."""
    head, sep, last = text.rpartition(" ")
    if not sep or GLUE in text:
        return fill(text)
    before, sep2, word = head.rpartition(" ")
    return fill(f"{before}{sep2}{word}{GLUE}{last}").replace(GLUE, " ")
