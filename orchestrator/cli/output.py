"""What commands print: `--json` values or their own text, and long outputs (the summary of every sweep is tens
of megabytes) written as they are made."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

import click

from orchestrator import json_text, tables


def echo_json_or_text(value, as_json: bool, text: Callable[[], str]) -> None:
    """`value` as indented JSON (what JSON cannot hold, such as a date or a path, as its str) under --json; else
    `text()`, made only then (a table may cost more than the value)."""
    click.echo(json.dumps(value, indent=2, default=str) if as_json else text())


SLICE = 1 << 20  # characters written at a time: written whole, a text is copied four times over at once (its line
# ending added, the inert stream's check, the encoding), 4 times slower than in slices that stay in the cache


def write_long(pieces: Iterable[str]) -> None:
    """A long text on stdout, piece by piece as it comes (each through the inert stream), a line ending after the
    last: never joined into one string (57 MB of CSV: 0.05 s, not 0.2). A reader that stops early (`| head`)
    ends the output, not the command: what follows still goes to stderr and the exit status stays 0."""
    with _reader_may_stop():
        for piece in pieces:
            sys.stdout.write(piece)
        sys.stdout.write("\n")
        sys.stdout.flush()


def slices(text: str) -> Iterator[str]:
    """text in slices of whole lines, about SLICE characters each."""
    start = 0
    while start < len(text):
        end = text.find("\n", start + SLICE)
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end


def joined(pieces: Iterable[str], separator: str = "\n") -> Iterator[str]:
    """The pieces with the separator between them, as write_long takes them."""
    for i, piece in enumerate(pieces):
        yield separator + piece if i else piece


def write_json(*chunks: str | bytes) -> None:
    """JSON rows (json_text.json_rows, in chunks) as a JSON array on stdout; a reader that stops early as in
    write_long."""
    sys.stdout.flush()
    with _reader_may_stop():
        json_text.write_json_array(chunks, sys.stdout.buffer)
        sys.stdout.buffer.write(b"\n")
        sys.stdout.buffer.flush()


@contextmanager
def _reader_may_stop():
    """A broken pipe ends the output: what is left unflushed goes nowhere."""
    try:
        yield
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def shell_lines(label: str, command: str) -> str:
    """A command line as it pastes into a shell: its words as given, lines joined by ` \\` within the terminal."""

    width, words = tables.terminal_width(), [shlex.quote(w) for w in shlex.split(command)]
    lines, current = [], label
    for word in words:
        if len(current) + 1 + len(word) + 2 > width and current.strip() != label:
            lines.append(current + " \\")
            current = "   "
        current += " " + word
    return "\n".join([*lines, current])


class InertStream:
    """A text stream that writes what it is given without anything a terminal would act on (tables.printable):
    every line orch prints may hold text from a model, a prompt or a file. `underlying` is the stream itself, for
    the one sequence orch sends on purpose (`orch watch` clearing the screen)."""

    def __init__(self, stream):
        self.underlying = stream

    def write(self, text: str) -> int:
        self.underlying.write(tables.printable(text))
        return len(text)

    def isatty(self) -> bool:
        return self.underlying.isatty()

    def flush(self) -> None:
        self.underlying.flush()

    def __getattr__(self, name):
        return getattr(self.underlying, name)


@contextmanager
def inert_output():
    """sys.stdout and sys.stderr as InertStreams while a command runs."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = InertStream(sys.stdout), InertStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
