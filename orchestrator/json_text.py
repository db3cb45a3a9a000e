"""Rows and values as JSON that every reader takes: integers beyond 64 bits as text, NaN and infinities as null,
dates in ISO form, big tables written in chunks (orjson). tables.render's JSON and every stored JSON column."""

from __future__ import annotations

import json
import math
import re
from datetime import date, datetime
from decimal import Decimal

import orjson


def default(value):
    """A value JSON has no type for, as JSON (and a CSV cell) writes it."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return str(value)


INT_RANGE = (-(2**63), 2**64 - 1)  # the integers orjson and DuckDB's JSON read as numbers


def jsonable(value):
    """value with what JSON readers cannot hold made harmless: an integer beyond 64 bits as its text, NaN and
    infinities as null (JSON has none), in nested dicts and lists too. Values that fit come back as they are."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value if INT_RANGE[0] <= value <= INT_RANGE[1] else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def dumps(value, option: int = 0) -> bytes:
    """orjson.dumps that never fails on a value: what it cannot hold goes through jsonable first."""
    try:
        return orjson.dumps(value, default=default, option=option)
    except orjson.JSONEncodeError:  # an integer beyond 64 bits (stored by an older orch, a script, an import)
        return orjson.dumps(jsonable(value), default=default, option=option)


def to_json(value, **options) -> str:
    """JSON text for a stored JSON column: total (jsonable first), so no value can make a later read fail."""
    return json.dumps(jsonable(value), default=default, allow_nan=False, **options)


def _json_row(row: dict, columns: list[str], names: set[str]) -> bytes:
    """One row as compact JSON (orjson: a 47k-row summary in a twentieth of the standard encoder's time; NaN and
    infinities become null, which JSON has, not NaN, which it has not), inert (_inert). A row holding exactly the
    columns is written as it is; others are completed with nulls in column order."""
    if len(row) != len(columns) or row.keys() != names:
        row = {c: row.get(c) for c in columns}
    return _inert(dumps(row, option=orjson.OPT_NON_STR_KEYS))


# What a terminal acts on that JSON may hold raw (orjson escapes the C0 controls only): DEL, the C1 controls and the
# bidirectional overrides, as tables.printable knows them. Their UTF-8 starts with one of _MAY_HOLD.
_RAW_ACTIVE = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_MAY_HOLD = (b"\x7f", b"\xc2", b"\xe2\x80", b"\xe2\x81")


def _inert(text: bytes) -> bytes:
    """JSON text with _RAW_ACTIVE's characters written as \\u escapes: every reader gets the same text, a terminal
    nothing to act on (output rows go to stdout as they are, not through the inert stream)."""
    if not any(start in text for start in _MAY_HOLD):
        return text
    return _RAW_ACTIVE.sub(lambda found: f"\\u{ord(found.group()):04x}", text.decode()).encode()


def write_json(rows: list[dict], stream, columns: list[str] | None = None) -> None:
    """render(rows, "json", columns) written to a binary stream as UTF-8, JSON_CHUNK rows at a time: a big table
    (the summary of every sweep is 100 MB) is never held whole, as text or as bytes."""
    columns = columns or all_keys(rows)
    write_json_array((json_rows(rows[i : i + JSON_CHUNK], columns) for i in range(0, len(rows), JSON_CHUNK)), stream)


def write_json_array(chunks, stream) -> None:
    """A JSON array to a binary stream from chunks of json_rows (bytes or text; empty ones skipped), one row
    per line."""
    first = True
    for chunk in chunks:
        if chunk:
            stream.write(b"[\n" if first else b",\n")
            stream.write(chunk.encode() if isinstance(chunk, str) else chunk)
            first = False
    stream.write(b"[]" if first else b"\n]")


def json_rows(rows: list[dict], columns: list[str] | None = None) -> bytes:
    """The rows as JSON objects, ",\\n" between them: the body of write_json's array."""
    columns = columns or all_keys(rows)
    names = set(columns)
    return b",\n".join([_json_row(r, columns, names) for r in rows])


JSON_CHUNK = 1000


def all_keys(rows: list[dict]) -> list[str]:
    """Every key any row has, in first-seen order (a key only some rows carry is not dropped), read from the
    distinct key sequences (a big table has few: one pass in C over the rows, not one per key)."""
    return list(dict.fromkeys(k for keys in dict.fromkeys(tuple(r) for r in rows) for k in keys))
