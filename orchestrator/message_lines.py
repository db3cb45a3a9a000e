"""One line of what another program or library said (an exception, a stderr), for orch's one-line messages
(errors.py): the first line where the cause comes first, the last where it comes last (a remote traceback)."""

from __future__ import annotations


def first_line(said: BaseException | str, *, prefer: tuple[str, ...] = (), limit: int | None = None) -> str:
    """The first non-blank line (stripped) of an exception's message or of a text, cut at `limit` characters.

    `prefer`: the first line starting with one of these wins over earlier ones (git's `fatal:` after its hints).
    Nothing to show: an exception's type name, or "" for a text (the caller has its own fallback then).
    """
    lines = _lines(said)
    lines = [line for line in lines if line.startswith(prefer)] or lines  # startswith(()) is False: all stay
    return _cut(lines[0], limit) if lines else _nothing(said)


def last_line(said: BaseException | str, *, limit: int | None = None) -> str:
    """The last non-blank line (stripped), for messages that end with their cause (a remote traceback)."""
    lines = _lines(said)
    return _cut(lines[-1], limit) if lines else _nothing(said)


def _lines(said: BaseException | str) -> list[str]:
    return [line.strip() for line in str(said).splitlines() if line.strip()]


def _cut(line: str, limit: int | None) -> str:
    return line[:limit] if limit else line


def _nothing(said: BaseException | str) -> str:
    return "" if isinstance(said, str) else type(said).__name__
