"""`orch report`: read sweeps back from the store and hand plain rows to report.page.write_report."""

from __future__ import annotations

from pathlib import Path

from orchestrator.analyze import summary, verdict
from orchestrator.analyze.comparison import compare_builds
from orchestrator.errors import NoSuchSweep
from orchestrator.machine import envinfo
from orchestrator.report.page import write_report
from orchestrator.store import queries


def build_report(con, sweep_ids: list[int], *, last: int, out: Path, run_id: int | None) -> Path:
    ids = sweep_ids or queries.last_sweeps(con, last)
    if not ids:
        raise NoSuchSweep("no sweeps stored yet; run a recipe first (orch run RECIPE)")
    runs = queries.report_runs(con, ids)
    if not runs:
        raise NoSuchSweep(f"no runs stored for sweep {', '.join(map(str, ids))}; list sweeps with "
                          f"`orch query 'SELECT id, recipe_path, build_name FROM sweeps'`")
    env = queries.sweep_env(con, max(ids)) or envinfo.snapshot()
    full = summary.arm_rows(con, ids)
    rows = [{c: r[c] for c in [*summary.table_columns(full), "is_baseline", "ci_low", "ci_high", "params"]}
            for r in full]
    return write_report(out, env=env, summary_rows=rows, runs=runs, verdicts=verdict.sweep_verdicts(full),
                        telemetry=_telemetry(con, runs, run_id), compare_rows=_compare(con, runs, ids),
                        title=f"orch report: sweep{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))}")


def _telemetry(con, runs: list[dict], run_id: int | None) -> list[dict]:
    """Samples of the chosen run, or of the longest ok run that has samples."""
    if run_id is None:
        sampled = queries.runs_with_telemetry(con, [r["run_id"] for r in runs])
        candidates = sorted((r for r in runs if r["status"] == "ok" and r["run_id"] in sampled),
                            key=lambda r: r["wall_s"] or 0, reverse=True)
        if not candidates:
            return []
        run_id = candidates[0]["run_id"]
    return queries.telemetry_rows(con, run_id)


def _compare(con, runs: list[dict], sweep_ids: list[int]) -> list[dict] | None:
    """Head vs base when the sweeps cover several builds: the first build seen against the last."""
    builds = list(dict.fromkeys(r["build_name"] for r in runs))
    if len(builds) < 2:
        return None
    return compare_builds(con, builds[0], builds[-1], recipe=None, threshold=0.05, sweep_ids=sweep_ids)["rows"]
