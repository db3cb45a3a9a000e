"""Sweep summaries kept in the results file: `read` gives the summaries of the sweeps asked for, the kept ones
where they are current and the rest computed from their runs; `keep` computes and stores them (for the
commands that write: a sweep's end, reparse, import, repair). `read` never writes.

Current means made from exactly the rows stored now (store/sweep_summaries: a fingerprint of every row the
summary reads) by exactly this code (code_key): a kept summary can be missing or old, never stale.
"""

from __future__ import annotations

import hashlib
import time
from concurrent.futures import Future
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import orjson

import orchestrator
from orchestrator.analyze import summary
from orchestrator.analyze.sweep_summary import CELL_COLUMNS, PARAMS, Summaries, SweepSummary, from_rows, no_arms
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


@dataclass(frozen=True)
class Read:
    summaries: Summaries
    computed: int  # sweeps whose summary was computed from their runs (none kept, or not current)
    computed_s: float  # the time that took


def read(con, sweep_ids: list[int], cells: list[str] = ()) -> Read:
    """The summaries of these sweeps (in sweep order): kept ones where current, the rest computed. Kept JSON and
    cells are read through `con` when drawn: draw them before closing it. `cells`: kept cells columns to start
    reading at once, on another thread, while the rest is read and computed (Summaries.prefetch)."""
    ids = sorted(set(sweep_ids))
    heads = {h["sweep_id"]: h for h in sweep_summaries.current(con, ids, code_key())}
    with_arms = [i for i in ids if i in heads and heads[i]["arms"]]  # the kept sweeps whose cells a table reads
    early = (list(cells), _cells_meanwhile(con, with_arms, list(cells))) if cells and with_arms else None
    start = time.perf_counter()
    missing = [i for i in ids if i not in heads]
    computed = {s.sweep: s for s in from_rows(summary.arm_rows(con, missing))} if missing else {}
    seconds = time.perf_counter() - start
    parts = [_kept(heads[i]) if i in heads else computed.get(i) or no_arms(i) for i in ids]
    return Read(
        Summaries(
            parts,
            read_rows=lambda kept, kind: sweep_summaries.row_texts(con, kept, kind),
            read_cells=lambda kept, names: _cells(con, kept, names),
            read_warnings=lambda kept: sweep_summaries.warning_lines(con, kept),
            read_cells_meanwhile=lambda kept, names: _cells_meanwhile(con, kept, names),
            prefetched=early,
        ),
        len(missing),
        seconds,
    )


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


def _cells_meanwhile(con, kept: list[int], names: list[str]) -> Future:
    """_cells on a thread of its own, through a connection of its own to the file (store/db.meanwhile)."""
    return db.meanwhile(con, _cells, kept, names)


def _kept(head: dict) -> SweepSummary:
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
    computed = {s.sweep: s for s in from_rows(summary.arm_rows(con, ids))}
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
