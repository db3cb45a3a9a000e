"""One arm's metric per ok run over some sweeps: what `orch bisect` and `orch history` compare.

A run metric (decode_tps, acceptance, ...) is read as stored; `speedup` is computed per repeat: the arm's decode
tok/s over its reference arm's (its control, else the baseline) in the same sweep and repeat, so drift that hits
both arms of one repeat alike cancels.
"""

from __future__ import annotations

from orchestrator.store import bisect_queries

SPEEDUP = "speedup"
METRICS = (*bisect_queries.RUN_METRICS, SPEEDUP)


def arm_samples(con, sweep_ids: list[int], arm: str, metric: str) -> tuple[list[float], int, int]:
    """(the metric per ok run, runs of the arm, failed or timed-out runs of the arm)."""
    column = "decode_tps" if metric == SPEEDUP else metric
    reference = bisect_queries.reference_arms(con, sweep_ids, arm) if metric == SPEEDUP else []
    rows = bisect_queries.metric_runs(con, sweep_ids, [arm, *reference], column)
    mine = [r for r in rows if r["arm"] == arm]
    runs, failed = len(mine), sum(r["status"] in ("failed", "timeout") for r in mine)
    if metric != SPEEDUP:
        return [float(r["value"]) for r in mine if r["status"] == "ok" and r["value"] is not None], runs, failed
    base = {
        (r["sweep_id"], r["repeat_index"]): r["value"]
        for r in rows
        if r["arm"] != arm and r["status"] == "ok" and r["value"]
    }
    return (
        [
            r["value"] / base[(r["sweep_id"], r["repeat_index"])]
            for r in mine
            if r["status"] == "ok" and r["value"] and (r["sweep_id"], r["repeat_index"]) in base
        ],
        runs,
        failed,
    )
