"""Per-arm summaries of sweeps, through one door: `orch summary`, `orch run`'s table, `orch watch`, the report and
the Python face (orchestrator/results.py) all read them here.

    found = summaries.read(con, sweep_ids, cells)    # Summaries: kept where current, else computed now
    table = summaries.computed(con, sweep_ids)       # Summaries computed now (a running sweep: `orch watch`)
    rows = summaries.rows(con, sweep_ids)            # the rows as dicts, every column (JSON, the library)
    summaries.keep(con, sweep_ids)                   # the commands that write: compute and keep them

Its parts, each named for what it does:
- compute.py: the rows, from the store's per-arm moments (store/arm_queries) and analyze/'s rules;
- form.py: a sweep's summary (SweepSummary) and several held together (Summaries), as every output draws them;
- kept.py: the summaries kept in the file (which are current, how they are read: KeptReader) and keeping them;
- draw.py: the table, markdown, CSV column choice and the lines under a table.

The speed tricks, each for the benchmark that measures it (benchmarks/store_scale.py, docs/benchmarks.md): a
summary kept at a sweep's end and read back instead of recomputed (every format, "kept"); the kept cells a table
draws read by column, on a thread of their own, while the rest is read and computed (KeptReader.start, "table");
JSON and CSV written as read, sweep by sweep, never joined whole ("json", "csv"); the garbage collector paused
while millions of row objects are made (collector_paused, "computed").
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from orchestrator.analyze.summaries.compute import arm_rows as rows
from orchestrator.analyze.summaries.compute import arm_rows_and_costs as rows_and_costs
from orchestrator.analyze.summaries.compute import collector_paused
from orchestrator.analyze.summaries.form import Summaries, from_rows, no_arms
from orchestrator.analyze.summaries.kept import KeptReader, keep, keep_stale, kept_heads, kept_summary

__all__ = ["Read", "Summaries", "collector_paused", "computed", "keep", "keep_stale", "read", "rows", "rows_and_costs"]


@dataclass(frozen=True)
class Read:
    summaries: Summaries
    computed: int  # sweeps whose summary was computed from their runs (none kept, or not current)
    computed_s: float  # the time that took


def read(con, sweep_ids: list[int], cells: list[str] = ()) -> Read:
    """The summaries of these sweeps (in sweep order): kept ones where current, the rest computed. Kept JSON and
    cells are read through `con` when drawn: draw them before closing it. `cells`: kept cells columns to start
    reading at once (KeptReader.start), while the rest is read and computed."""
    ids = sorted(set(sweep_ids))
    heads = kept_heads(con, ids)
    reader = KeptReader(con)
    with_arms = [i for i in ids if i in heads and heads[i]["arms"]]  # the kept sweeps whose cells a table reads
    if cells and with_arms:
        reader.start(with_arms, list(cells))
    start = time.perf_counter()
    missing = [i for i in ids if i not in heads]
    made = {s.sweep: s for s in from_rows(rows(con, missing))} if missing else {}
    seconds = time.perf_counter() - start
    parts = [kept_summary(heads[i]) if i in heads else made.get(i) or no_arms(i) for i in ids]
    return Read(Summaries(parts, reader), len(missing), seconds)


def computed(con, sweep_ids: list[int]) -> Summaries:
    """These sweeps' summaries computed from their runs now, nothing kept read (a sweep still running)."""
    return Summaries(from_rows(rows(con, sweep_ids)))
