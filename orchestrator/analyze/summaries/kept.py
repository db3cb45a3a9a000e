"""Sweep summaries kept in the results file: which are current (kept_heads), how a table reads them (KeptReader),
and `keep`, which computes and stores them (for the commands that write: a sweep's end, reparse, import, repair).
Reading never writes.

Current means made from exactly the rows stored now (store/sweep_summaries: a fingerprint of every row the
summary reads) by exactly this code (code_key): a kept summary can be missing or old, never stale.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import duckdb
import orjson

import orchestrator
from orchestrator.analyze.summaries import compute
from orchestrator.analyze.summaries.form import CELL_COLUMNS, PARAMS, SweepSummary, from_rows, no_arms
from orchestrator.store import db, sweep_summaries


@lru_cache(maxsize=1)
def code_key() -> str:
    """What a kept summary was made by: every module of orch (a rule or a format changed anywhere changes it),
    and the DuckDB and orjson versions that computed and wrote its numbers. 5 ms."""
    root = Path(orchestrator.__file__).parent
    digest = hashlib.sha256(f"duckdb {sweep_summaries.ENGINE}, orjson {orjson.__version__}".encode())
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:32]


@dataclass
class KeptReader:
    """The kept summaries of one open results file, read as a table asks for them (store/sweep_summaries over
    `con`), and the one read of cells started early, on a thread of its own while the rest is read and computed
    (store/db.meanwhile: DuckDB lets Python run while it reads; benchmarks/store_scale.py, "table")."""

    con: duckdb.DuckDBPyConnection
    _early: tuple[list[str], Future] | None = field(default=None, repr=False)  # columns being read, and how

    def rows(self, sweeps: list[int], kind: str) -> list[str]:
        """Each sweep's kept JSON rows, CSV lines or CSV header (kind: the column of sweep_summaries)."""
        return sweep_summaries.row_texts(self.con, sweeps, kind)

    def warnings(self, sweeps: list[int]) -> dict[int, list[str]]:
        return sweep_summaries.warning_lines(self.con, sweeps)

    def start(self, sweeps: list[int], names: list[str]) -> None:
        """Start reading these columns' cells of these sweeps, unless they are being read already."""
        if not (self._early and set(names) <= set(self._early[0])):
            self._early = (list(names), db.meanwhile(self.con, _cells, sweeps, names))

    def cells(self, sweeps: list[int], names: list[str]) -> dict[str, list]:
        """Per column, the kept cells of these sweeps one after the other: what start began where it covers them."""
        if self._early and set(names) <= set(self._early[0]):
            return self._early[1].result()
        return _cells(self.con, sweeps, names)


def kept_heads(con, ids: list[int]) -> dict[int, dict]:
    """The kept summaries of these sweeps that are current (their rows and code unchanged since), by sweep."""
    return {h["sweep_id"]: h for h in sweep_summaries.current(con, ids, code_key())}


def _cells(con, kept: list[int], names: list[str]) -> dict[str, list]:
    """Per column name, the kept cells of these sweeps one after the other (sweep order). The parameters, which
    sweeps of one recipe repeat, are read once per distinct array; every other column as one array."""
    flat = [n for n in names if n != PARAMS]
    read = {n: orjson.loads(text) for n, text in sweep_summaries.cells(con, kept, flat).items()} if flat else {}
    if PARAMS in names:
        arrays = {}
        for text, sweeps in sweep_summaries.cells_by_value(con, kept, PARAMS):
            arms = orjson.loads(text)
            arrays.update(dict.fromkeys(sweeps, arms))
        read[PARAMS] = [a for sweep in kept for a in arrays.get(sweep, ())]  # a missing sweep: Summaries.load says
    return read


def kept_summary(head: dict) -> SweepSummary:
    return SweepSummary(
        head["sweep_id"], head["arms"], orjson.loads(head["facts"]), None, head["verdict"], None
    )  # unread: the warnings' texts (--explain), the CSV header


def keep(con, sweep_ids: list[int]) -> None:
    """Compute these sweeps' summaries and store them, then stamp the file (store/sweep_summaries.stamp). con: a
    write connection with nothing uncommitted, on a file no other process writes meanwhile (orch's writes are
    exclusive)."""
    _keep(con, sweep_ids)
    sweep_summaries.stamp(con, code_key())


def _keep(con, sweep_ids: list[int]) -> None:
    ids = sorted(set(sweep_ids))
    if not ids:
        return
    code = code_key()
    fingerprint = sweep_summaries.fingerprints(con, ids)  # before the rows are read: what they were read from
    computed = {s.sweep: s for s in from_rows(compute.arm_rows(con, ids))}
    parts = [computed.get(i) or no_arms(i) for i in ids if i in fingerprint]
    sweep_summaries.keep(con, code, fingerprint, [p.stored() for p in parts])


def keep_stale(con) -> int:
    """Keep the summaries of every finished sweep whose kept one is missing, not current or damaged (cells not
    one per arm); how many."""
    ids = sweep_summaries.finished_sweeps(con)
    current = {h["sweep_id"] for h in sweep_summaries.current(con, ids, code_key())}
    current -= set(sweep_summaries.unlike_their_arms(con, CELL_COLUMNS))
    stale = [i for i in ids if i not in current]
    for start in range(0, len(stale), 2048):  # a bounded batch: its rows are held in memory while stored
        _keep(con, stale[start : start + 2048])
    sweep_summaries.stamp(con, code_key())
    return len(stale)
