"""`orch report`: read sweeps back from the store and hand plain rows to report.write_report."""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.machine import envinfo
from orchestrator import store
from orchestrator.analyze import summary
from orchestrator.analyze.comparison import compare_builds
from orchestrator.errors import OrchError
from orchestrator.report.page import write_report

RUNS_SQL = """
SELECT run_id, sweep_id, build_name, arm, is_baseline, status, decode_tps, acceptance, wall_s
FROM run_summary WHERE sweep_id IN (SELECT unnest(?::INTEGER[]))  -- measured runs: no warm-ups
ORDER BY run_id
"""


def build_report(con, sweep_ids: list[int], *, last: int, out: Path, run_id: int | None) -> Path:
    ids = sweep_ids or summary.last_sweeps(con, last)
    if not ids:
        raise OrchError("no sweeps stored yet; run a recipe first (orch run RECIPE)")
    runs = store.rows_as_dicts(con.execute(RUNS_SQL, [ids]))
    if not runs:
        raise OrchError(f"no runs stored for sweep {', '.join(map(str, ids))}; list sweeps with "
                        f"`orch query 'SELECT id, recipe_path, build_name FROM sweeps'`")
    env_text = con.execute("SELECT env FROM sweeps WHERE id = ?", [max(ids)]).fetchone()[0]
    env = json.loads(env_text) if env_text else envinfo.snapshot()
    rows = [{c: r[c] for c in [*summary.TABLE_COLUMNS, "is_baseline"]} for r in summary.arm_rows(con, ids)]
    return write_report(out, env=env, summary_rows=rows, runs=runs,
                        telemetry=_telemetry(con, runs, run_id), compare_rows=_compare(con, runs, ids),
                        title=f"orch report: sweep{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))}")


def _telemetry(con, runs: list[dict], run_id: int | None) -> list[dict]:
    """Samples of the chosen run, or of the longest ok run that has samples."""
    if run_id is None:
        sampled = {r[0] for r in con.execute("SELECT DISTINCT run_id FROM telemetry").fetchall()}
        candidates = sorted((r for r in runs if r["status"] == "ok" and r["run_id"] in sampled),
                            key=lambda r: r["wall_s"] or 0, reverse=True)
        if not candidates:
            return []
        run_id = candidates[0]["run_id"]
    return store.rows_as_dicts(con.execute("SELECT * FROM telemetry WHERE run_id = ? ORDER BY t, gpu", [run_id]))


def _compare(con, runs: list[dict], sweep_ids: list[int]) -> list[dict] | None:
    """Head vs base when the sweeps cover several builds: the first build seen against the last."""
    builds = list(dict.fromkeys(r["build_name"] for r in runs))
    if len(builds) < 2:
        return None
    return compare_builds(con, builds[0], builds[-1], recipe=None, threshold=0.05, sweep_ids=sweep_ids)["rows"]
