"""Rows (a list of dicts) as an aligned text table, Markdown, CSV or JSON: the one formatter every command uses."""

from __future__ import annotations

import csv
import io
import json
from datetime import date, datetime
from decimal import Decimal
from functools import lru_cache


def _json_default(value):
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return str(value)


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    if isinstance(value, (datetime, date)):
        return value.isoformat(sep=" ", timespec="seconds") if isinstance(value, datetime) else value.isoformat()
    return str(value)


# Compact, so the C encoder runs (an indent selects the pure-Python one, ten times slower on a big summary).
_JSON_ROW = json.JSONEncoder(default=_json_default, ensure_ascii=False).encode


def clock(seconds: float) -> str:
    """A duration as H:MM:SS, for progress lines and `orch watch`."""
    seconds = max(int(seconds), 0)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def render(rows: list[dict], fmt: str = "table", columns: list[str] | None = None) -> str:
    # Without columns: every key any row has, in first-seen order (a key only some rows carry is not dropped).
    columns = columns or list(dict.fromkeys(k for r in rows for k in r))
    if fmt == "json":  # an array with one row per line: valid JSON, and still readable, greppable and diffable
        return "[\n" + ",\n".join(_JSON_ROW({c: r.get(c) for c in columns}) for r in rows) + "\n]" if rows else "[]"
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([[_json_default(r.get(c)) if r.get(c) is not None else "" for c in columns] for r in rows])
        return buf.getvalue().rstrip("\n")
    if fmt == "md":
        return _markdown(rows, columns)
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(v.rjust(w) if _numeric(v) else v.ljust(w) for v, w in zip(row, widths)).rstrip()
              for row in cells]
    return "\n".join(lines)


def _markdown(rows: list[dict], columns: list[str]) -> str:
    """A GitHub-flavoured pipe table; a column of numbers (and dashes for missing) is right-aligned."""
    cells = [[_md_escape(_cell(r.get(c))) for c in columns] for r in rows]
    right = [bool(rows) and all(_numeric(row[i]) or row[i] == "-" for row in cells) for i in range(len(columns))]
    lines = ["| " + " | ".join(_md_escape(c) for c in columns) + " |",
             "|" + "|".join("---:" if r else "---" for r in right) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join(lines)


def _md_escape(text: str) -> str:
    # a pipe would end the cell and a newline the row
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


@lru_cache(maxsize=65536)  # a big table repeats its cell texts: each is tried once
def _numeric(text: str) -> bool:
    try:
        float(text.rstrip("%x"))
        return True
    except ValueError:
        return False
