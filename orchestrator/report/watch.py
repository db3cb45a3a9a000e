"""`orch watch`: one frame of a running sweep, read from the results file like any reader (it never writes).

A frame: runs ended of planned, elapsed and ETA, the run in flight, the summary so far (the same rows and
verdict as `orch summary`: partial sweeps pair what has run) and the last failures.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from orchestrator import tables
from orchestrator.analyze import summaries
from orchestrator.analyze.summaries import draw
from orchestrator.store import queries

FAILURES_SHOWN = 3


@dataclass(frozen=True)
class Frame:
    sweep_id: int
    status: str  # the sweep's: running while its orch runs it, then done, interrupted or failed
    text: str
    ended: int  # runs ended (any outcome) since the sweep's orch (re)started it

    @property
    def running(self) -> bool:
        return self.status == "running"


def frame(con, sweep_id: int, now: datetime) -> Frame:
    p = queries.sweep_progress(con, sweep_id)
    table = summaries.computed(con, [sweep_id])  # the table and the verdict from one summary of the rows
    since = p["owner_since"] or p["started_at"]
    elapsed = ((p["ended_at"] if p["status"] != "running" and p["ended_at"] else now) - since).total_seconds()
    planned = p["planned_runs"]
    head = f"sweep {sweep_id} ({p['recipe_path']}, {p['build_name']}): {p['status']}, {p['ended']}"
    head += f"/{planned} runs" if planned else " runs"
    head += f" ({p['ok']} ok, {p['failed']} failed, {p['skipped']} skipped), {tables.clock(elapsed)} elapsed"
    if p["status"] == "running" and planned and p["ended"]:
        head += f", ETA {tables.clock(elapsed / p['ended'] * max(planned - p['ended'], 0))}"
    lines = [head]
    if p["status"] == "running" and p["running_arm"]:
        lines.append(f"running: {p['running_arm']}")
    if table.with_arms:
        lines += ["", draw.table_text(table)]
        lines += [
            tables.fill(f"verdict{' so far' if p['status'] == 'running' else ''}: {s.verdict}") for s in table.with_arms
        ]
    failures = queries.recent_failures(con, sweep_id, FAILURES_SHOWN)
    if failures:
        lines += ["", f"last {len(failures)} failure(s):"]
        lines += [
            f"  run {f['run']} {f['arm']}: {f['status']} ({f['failure_class']}) {f['failure_detail'] or ''}".rstrip()
            for f in failures
        ]
    return Frame(sweep_id, p["status"], "\n".join(lines), p["ended"])
