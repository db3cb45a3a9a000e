"""Opening the results file: shared read-only opens for reads, short exclusive opens for writes (retried while
another process holds the lock), migrated, checked and recovered on open; time and row helpers."""

from __future__ import annotations

import contextlib
import errno
import json
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb

from orchestrator import disk, stops
from orchestrator.errors import DamagedSchema, DatabaseUnavailable, NoDatabase, OrchError
from orchestrator.message_lines import first_line
from orchestrator.store import migrations, recovery, schema, views
from orchestrator.store.times import utc as utc  # naive UTC, as every TIMESTAMP column stores time
from orchestrator.store.times import utc_from_epoch as utc_from_epoch
from orchestrator.store.times import utcnow as utcnow

# A writer holds the file only while it writes (a run's start, its end, the sweep's), so it waits for readers
# (who hold it for one command) rather than failing; a reader waits for the writer's next gap.
WRITE_WAIT_S = 120.0
READ_WAIT_S = 60.0
_ready: set[Path] = set()  # files this process has migrated, checked and recovered


def connect(
    path: Path, *, read_only: bool = False, create: bool = True, check: bool = True, wait_s: float | None = None
) -> duckdb.DuckDBPyConnection:
    """Open the results database (the caller closes it, or use `opened`).

    read_only: a shared open (readers never block each other); it never creates the file, and writes only what
    the file needs to be read: pending migrations, views not made from this orch's definitions (store/views.py) and
    the recovery of sweeps whose orch died (store/recovery.py).
    check: refuse a file that lacks a table or view orch made (DamagedSchema); `orch repair` opens without it.
    """
    path = Path(path)
    if not path.exists() and (read_only or not create):
        raise NoDatabase(
            f"no results database at {path}: check --db (or $ORCH_DB), or run a recipe first "
            f"(orch run RECIPE) to create it"
        )
    if path.exists() and not path.is_file():  # a FIFO would block the open for ever, a device be read as one
        raise DatabaseUnavailable(
            f"{path} is not a regular file but a directory, FIFO, device or socket: give --db "
            f"(or $ORCH_DB) a results file"
        )
    wait_s = (READ_WAIT_S if read_only else WRITE_WAIT_S) if wait_s is None else wait_s
    fresh = not path.exists()
    try:
        con = _open(path, read_only, wait_s)
    except OrchError as exc:
        if fresh:  # DuckDB made the file, found no room for its header and calls it "not a valid DuckDB file"
            _remove(path)
            if shutil.disk_usage(path.parent).free < disk.ROOM_FOR_A_FILE:
                raise disk.full(OSError(errno.ENOSPC, "No space left on device", str(path)), path) from exc
        raise
    try:
        if not read_only:
            if path.resolve() not in _ready:  # a sweep opens the file for every write: prepare it once
                _prepare(con, path, check)
            return con
        pending = migrations.pending(con)
        if not pending and views.current(con):
            if check:
                _check(con, path)
            if not check or not recovery.dead_sweeps(con):
                return con
        con.close()
        try:  # migrate, make the views, or recover a dead orch's sweep; then read
            writer = _open(path, False, wait_s)
            try:
                _prepare(writer, path, check)
            finally:
                writer.close()
        except Exception as exc:
            if pending or not disk.no_space(exc):
                raise
            # A full disk: the file is read as it is (its views as made, a dead sweep still "running"); the
            # next write that finds space recovers what this one could not.
        return _open(path, True, wait_s)
    except BaseException:
        con.close()
        if fresh and not read_only:  # a results file that could not be made is not left behind
            _remove(path)
        raise


def _remove(path: Path) -> None:
    for made in (path, path.with_name(path.name + ".wal")):
        made.unlink(missing_ok=True)


def _prepare(con, path: Path, check: bool) -> None:
    with stops.held():  # migrations and recoveries are writes: a stop waits for their end
        if migrations.pending(con):
            views.drop(con)  # migrations change tables only, with no view in place
        migrations.apply(con)
        with contextlib.suppress(duckdb.Error):  # a table dropped by hand: the check names it, `orch repair` mends
            views.make(con)
        if check:
            _check(con, path)
            recovery.recover_dead(con)
            _ready.add(path.resolve())


def _check(con, path: Path) -> None:
    if lacks := schema.missing(con):
        raise DamagedSchema(
            f"results database {path} lacks {', '.join(lacks)} (dropped by hand?): run "
            f"`orch repair --db {path}` to restore them (rows already deleted stay gone)"
        )


def _open(path: Path, read_only: bool, wait_s: float) -> duckdb.DuckDBPyConnection:
    """duckdb.connect, retried with backoff while another process holds the file's lock, up to wait_s; past
    TELL_WAIT_S of waiting, one line on stderr says for whom."""
    start = time.monotonic()
    deadline, delay, told = start + wait_s, 0.005, False
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.Error as exc:
            if "could not set lock" not in str(exc).lower():
                raise DatabaseUnavailable(
                    f"cannot open results database {path}: {first_line(exc)}; pass --db with an orch results file"
                ) from None
            if time.monotonic() >= deadline:
                raise DatabaseUnavailable(
                    f"results database {path} stayed locked for {wait_s:.0f}s "
                    f"({_holder(exc)}); wait for it to finish or stop it"
                ) from None
            if not told and time.monotonic() - start > TELL_WAIT_S:
                sys.stderr.write(f"orch: waiting for {path}: {_holder(exc)} (up to {wait_s:.0f}s; Ctrl-C stops)\n")
                told = True
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


TELL_WAIT_S = 2.0  # a writer's gap is milliseconds: a wait this long is someone else's long write


def _holder(exc: Exception) -> str:
    found = re.search(r"held in (.+?) \(PID (\d+)\)", str(exc))
    return f"held by {Path(found.group(1)).name} pid {found.group(2)}" if found else first_line(exc)


@contextmanager
def opened(
    path: Path, *, read_only: bool = False, create: bool = True, check: bool = True, wait_s: float | None = None
) -> Iterator[duckdb.DuckDBPyConnection]:
    """`with opened(db) as con:` the connection is closed whatever happens inside. A stop signal that lands
    inside a write is held until the block ends (orchestrator/stops.py): the waiting for a lock stays
    interruptible, the writing does not. A read has nothing to protect: a stop ends it at once."""
    con = connect(path, read_only=read_only, create=create, check=check, wait_s=wait_s)
    with contextlib.nullcontext() if read_only else stops.held():
        try:
            yield con
        finally:
            con.close()


@dataclass(frozen=True)
class Database:
    """The results file as a long command (a sweep) uses it: opened for each write and closed right after, so
    readers (`orch summary`, `orch watch`, a notebook) get in between and a second `orch run` can write too."""

    path: Path

    def write(self):
        return opened(self.path)

    def read(self):
        return opened(self.path, read_only=True)


def meanwhile(con: duckdb.DuckDBPyConnection, read: Callable, *args) -> Future:
    """read(cursor, *args) on a thread of its own, through a cursor of its own (DuckDB runs a query while Python
    goes on), closed as soon as it has read: an open one would keep the file open in this process, and DuckDB
    then refuses a write connection to it."""

    def run(cursor):
        try:
            return read(cursor, *args)
        finally:
            cursor.close()

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="orch-read")
    try:
        return pool.submit(run, con.cursor())
    finally:
        pool.shutdown(wait=False)  # the thread ends with its read


def rows_as_dicts(cursor, *, decode_json: bool = False) -> list[dict]:
    """The rows as dicts; decode_json: columns of type JSON as their values, not their text (DuckDB hands JSON to
    Python as text)."""
    names = [d[0] for d in cursor.description]
    rows = [dict(zip(names, row)) for row in cursor.fetchall()]
    if decode_json:
        typed = [d[0] for d in cursor.description if str(d[1]) == "JSON"]
        for row in rows:
            row.update({k: json.loads(row[k]) for k in typed if row[k] is not None})
    return rows
