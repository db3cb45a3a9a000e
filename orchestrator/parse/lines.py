"""Line cleaning shared by every parser: drop the log prefixes llama.cpp has added over the years.

Since the May-2026 log rework every non-continuation line reads `M.SS.mmm.uuu L ` (time since start, level),
and common/server/speculative helpers add a subsystem tag such as `spec common_specu: ` or
`slot print_timing: id  1 | task 0 | `. Older builds print the bare message. Parsers match the bare message,
so they work on every era and on stdout, stderr or both concatenated.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

# `0.06.895.980 I ` (minutes.seconds.ms.us, then I/W/E/D). With `--no-log-timestamps` (2026) or `--log-prefix`
# alone (early 2026) only the level is printed: `I common_perf_print: ...`. Timestamps alone print nothing.
TIMESTAMP_RE = re.compile(r"^(?:\d+\.\d{2}\.\d{3}\.\d{3} )?([IWED]) ")
# Subsystem tag: kind, function name printed `%12.*s` (right-aligned, cut to 12), then `: `.
SUBSYSTEM_RE = re.compile(r"^(?:slot|srv|spec|cmn|que)\s+\S{1,12}: (?:id\s+-?\d+ \| task -?\d+ \| )?")
# Server slot lines keep `id N | task N | ` even where the tag is absent (continuations in 2025 builds).
SLOT_ID_RE = re.compile(r"^id\s+-?\d+ \| task -?\d+ \| ")
# `--log-jsonl` (2026+) puts every message in `{"type":"log",...,"level":"info","msg":"..."}` on stdout.
JSONL_LEVELS = {"info": "I", "warn": "W", "error": "E", "debug": "D"}


@dataclass(frozen=True)
class Line:
    text: str  # message without prefixes, right-stripped
    level: str | None  # "I", "W", "E", "D" when the line carried a timestamp prefix


def strip_prefixes(raw: str) -> tuple[str, str | None]:
    """One raw line -> (bare message, level or None)."""
    line = raw.rstrip("\r\n")
    level = None
    m = TIMESTAMP_RE.match(line)
    if m:
        level = m.group(1)
        line = line[m.end() :]
    m = SUBSYSTEM_RE.match(line)
    if m:
        line = line[m.end() :]
    else:
        m = SLOT_ID_RE.match(line)
        if m:
            line = line[m.end() :]
    return line.rstrip(), level


def clean_lines(text: str) -> list[Line]:
    """Every line of `text` with its prefixes removed (empty lines kept: they separate blocks)."""
    out = []
    for raw in text.splitlines():
        if raw.startswith('{"type":"log"'):
            out.extend(_jsonl_lines(raw))
            continue
        msg, level = strip_prefixes(raw)
        out.append(Line(msg, level))
    return out


def _jsonl_lines(raw: str) -> list[Line]:
    try:
        rec = json.loads(raw)
    except ValueError:
        return [Line(raw.rstrip(), None)]
    level = JSONL_LEVELS.get(str(rec.get("level")))
    return [Line(strip_prefixes(part)[0], level) for part in str(rec.get("msg", "")).splitlines()]


def to_int(token: str | None) -> int | None:
    """A printed count; None for anything that is not a plain integer of at most 18 digits (fits a BIGINT).

    int() of a 5000-digit string raises (and costs time); a count that long is a damaged log, not a count.
    """
    if token is None:
        return None
    t = token.strip()
    digits = t.lstrip("-+")
    if not digits.isdigit() or len(digits) > 18:
        return None
    return int(t)


def to_float(token: str | None) -> float | None:
    """A printed number; `nan`, `-nan`, `inf` (C printf of 0/0 and x/0) become None: they carry no measurement."""
    if token is None:
        return None
    t = token.strip().lower()
    if t.lstrip("-") in ("nan", "inf"):
        return None
    try:
        value = float(t)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
