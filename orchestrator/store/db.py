"""Opening the results file: migrated on every open, closed by a context manager; time and row helpers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from orchestrator.errors import DatabaseUnavailable
from orchestrator.store import migrations
from orchestrator.store.migrations import (
    utcnow as utcnow,  # naive UTC, as every TIMESTAMP column stores time
)


def utc_from_epoch(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, timezone.utc).replace(tzinfo=None)


def utc(value):
    """An ISO string or aware datetime as naive UTC, the way every timestamp column stores it."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if isinstance(value, datetime) and value.tzinfo is not None:
        value = value.astimezone(timezone.utc).replace(tzinfo=None)
    return value


def connect(path: Path) -> duckdb.DuckDBPyConnection:
    """Open (creating and migrating) the results database; the caller closes it, or use `opened`."""
    try:
        con = duckdb.connect(str(path))
    except duckdb.Error as exc:
        raise DatabaseUnavailable(f"cannot open results database {path} ({exc}); close other orch or duckdb "
                        f"sessions using it, or pass --db") from None
    migrations.apply(con)
    return con




@contextmanager
def opened(path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """`with opened(db) as con:` the connection is closed whatever happens inside."""
    con = connect(path)
    try:
        yield con
    finally:
        con.close()


def rows_as_dicts(cursor) -> list[dict]:
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]
