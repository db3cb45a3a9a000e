"""CSV that a spreadsheet and Python's csv reader both take as data: a field holding a carriage return or a line
feed is quoted (Python's writer quotes only its own line terminator, so a bare CR went out unquoted and the reader
then failed), and a text cell that a spreadsheet would run as a formula (=, +, @, a tab or CR first, or - not
being a whole number: `-1+cmd|...` is a formula) starts with an apostrophe instead. Numbers are written as numbers."""

from __future__ import annotations

import csv
import io
import re

_FORMULA = re.compile(r"[=+@\t\r-]")


def text(lines: list[list]) -> str:
    """The lines as CSV, "\\n" between them and none after the last."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")  # CR and LF both terminators: a field holding either is quoted
    for line in lines:
        writer.writerow([inert(v) for v in line])
        buf.seek(buf.tell() - 2)  # the row's own "\r\n" becomes "\n"
        buf.truncate()
        buf.write("\n")
    return buf.getvalue().rstrip("\n")


def inert(value):
    """A text cell a spreadsheet shows as written; anything else as it is."""
    return "'" + value if isinstance(value, str) and _FORMULA.match(value) and not _number(value) else value


def _number(text: str) -> bool:
    """A cell that is a negative number and nothing else (-1.5, -2e3): a spreadsheet reads it as that number."""
    try:
        float(text)
    except ValueError:
        return False
    return text.startswith("-") and (text[1:2].isdigit() or text[1:2] == ".")
