"""Finished runs on their way into the results file: a few runs to one write.

Opening the results file costs about 15 ms (DuckDB's start) and closing it a few more; writing each run as it
ends, twice (its start, its end), was most of orch's own time between runs (130-150 ms per run on short tiny-model
runs). Runs are now kept here as they end and written together at most every FLUSH_S seconds, at the sweep's
end, and before anything reads them back (quality mode's measurement). Nothing is lost in between: every run's
row and logs sit in its folder of the sweep's work directory until the write that stores them, and a recovery
stores a dead orch's runs from there (store/recovery.py). Readers see a run at most FLUSH_S after it ended.
"""

from __future__ import annotations

import time

from orchestrator import store
from orchestrator.run.one_run import RunRecord, remove_folder

FLUSH_S = 1.0  # the longest a finished run waits before it is in the results file
MOST = 64  # and the most that wait together (one write's memory)


class Pending:
    def __init__(self, db: store.Database):
        self.db = db
        self.records: list[RunRecord] = []
        self.since = time.monotonic()

    def add(self, record: RunRecord) -> None:
        self.records.append(record)
        if len(self.records) >= MOST or time.monotonic() - self.since >= FLUSH_S:
            self.flush()

    def flush(self) -> None:
        """Store every pending run in one write (a run whose metrics the store refuses is stored failed,
        parse_error, without them), then remove their folders."""
        if self.records:
            with self.db.write() as con:
                store.store_runs(con, [_stored(r) for r in self.records])
            for record in self.records:
                remove_folder(record)
            self.records = []
        self.since = time.monotonic()


def _stored(record: RunRecord) -> store.StoredRun:
    return store.StoredRun(
        row=record.row, logs=record.logs, samples=record.samples, parsed=record.parsed, requests=record.requests
    )
