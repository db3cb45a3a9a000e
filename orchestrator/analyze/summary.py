"""Per-arm summaries of stored sweeps: intervals, speedup vs the baseline paired by repeat (and prompt in
server mode), and the fixed set of statistical warnings."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict

from orchestrator.analyze import stats
from orchestrator import store

RUNS_SQL = """
SELECT r.sweep_id, regexp_extract(s.recipe_path, '[^/]+$') AS recipe, s.build_name AS build, r.id AS run_id, r.arm,
       r.is_baseline, r.repeat_index, r.mode, r.status, r.failure_class, r.params, m.decode_tps, m.acceptance,
       m.draft_per_generated, m.encode_tps, m.n_drafted, m.n_accepted,
       r.bandwidth_bytes_per_s / nullif(r.decode_bytes, 0) AS bound_tps, r.bandwidth_label
FROM measured_runs r JOIN sweeps s ON s.id = r.sweep_id LEFT JOIN metrics m ON m.run_id = r.id
WHERE r.sweep_id IN (SELECT unnest(?::INTEGER[]))
ORDER BY r.sweep_id, r.id
"""
# Server mode pairs per (repeat, prompt): each request's own decode rate.
REQUESTS_SQL = """
SELECT q.run_id, q.prompt_id, q.predicted_n / q.predicted_ms * 1000 AS tps
FROM requests q JOIN runs r ON r.id = q.run_id
WHERE r.sweep_id IN (SELECT unnest(?::INTEGER[])) AND q.status = 'ok' AND q.predicted_ms > 0
"""
TABLE_COLUMNS = ["sweep", "recipe", "build", "arm", "ok", "decode_tps", "ci95", "cv", "acceptance", "draft_per_gen",
                 "speedup", "speedup_ci95", "prompt_tps", "bound_tps", "roofline_pct", "warnings"]


def last_sweeps(con, n: int) -> list[int]:
    return [r[0] for r in con.execute("SELECT id FROM sweeps ORDER BY id DESC LIMIT ?", [n]).fetchall()][::-1]


def _mean(values) -> float | None:
    xs = [v for v in values if v is not None]
    return statistics.fmean(xs) if xs else None


def arm_rows(con, sweep_ids: list[int]) -> list[dict]:
    runs = store.rows_as_dicts(con.execute(RUNS_SQL, [sweep_ids]))
    per_request = defaultdict(dict)
    for row in store.rows_as_dicts(con.execute(REQUESTS_SQL, [sweep_ids])):
        per_request[row["run_id"]][row["prompt_id"]] = row["tps"]
    arms: dict[tuple, list[dict]] = defaultdict(list)
    for run in runs:
        arms[(run["sweep_id"], run["arm"])].append(run)
    out = []
    for sweep_id in dict.fromkeys(r["sweep_id"] for r in runs):
        sweep_arms = {arm: rs for (s, arm), rs in arms.items() if s == sweep_id}
        out += _sweep_rows(sweep_arms, per_request)
    return out


def _samples(runs: list[dict], per_request: dict) -> dict:
    """Decode tok/s keyed for pairing: repeat in CLI mode, (repeat, prompt) in server mode."""
    ok = [r for r in runs if r["status"] == "ok" and r["decode_tps"]]
    if ok and ok[0]["mode"] == "server":
        return {(r["repeat_index"], p): tps for r in ok for p, tps in per_request.get(r["run_id"], {}).items()}
    return {r["repeat_index"]: r["decode_tps"] for r in ok}


def _sweep_rows(sweep_arms: dict[str, list[dict]], per_request: dict) -> list[dict]:
    base_runs = next((rs for rs in sweep_arms.values() if rs[0]["is_baseline"]), None)
    base = _samples(base_runs, per_request) if base_runs else {}
    rows, points = [], {}
    for arm, runs in sweep_arms.items():
        ok = [r for r in runs if r["status"] == "ok"]
        d = stats.describe([r["decode_tps"] for r in ok])
        speed = stats.paired_speedup(base, _samples(runs, per_request)) if base and not runs[0]["is_baseline"] else None
        acceptance = _mean(r["acceptance"] for r in ok)
        method = json.loads(runs[0]["params"] or "{}").get("spec", "draft")
        if speed and acceptance is not None:
            points.setdefault(method, []).append((acceptance, speed.ratio))
        rows.append({"sweep": runs[0]["sweep_id"], "recipe": runs[0]["recipe"], "build": runs[0]["build"], "arm": arm,
                     "is_baseline": bool(runs[0]["is_baseline"]), "method": method,
                     "ok": f"{len(ok)}/{len(runs)}", "runs": len(runs), "n": d.n, "decode_tps": d.mean,
                     "ci_low": d.ci_low, "ci_high": d.ci_high, "stdev": d.stdev, "cv": d.cv, "acceptance": acceptance,
                     "draft_per_gen": _mean(r["draft_per_generated"] for r in ok),
                     "speedup": 1.0 if runs[0]["is_baseline"] and ok else speed.ratio if speed else None,
                     "speedup_low": speed.ci_low if speed else None, "speedup_high": speed.ci_high if speed else None,
                     "prompt_tps": _mean(r["encode_tps"] for r in ok),
                     "bound_tps": _mean(r["bound_tps"] for r in ok),
                     "bound_label": runs[0]["bandwidth_label"],
                     "failures": ",".join(sorted({r["failure_class"] for r in runs if r["failure_class"]})) or None,
                     "_samples": [r["decode_tps"] for r in ok], "_spread": _spread(ok, per_request),
                     "_drafted": sum(r["n_drafted"] or 0 for r in ok),
                     "_accepted": sum(r["n_accepted"] or 0 for r in ok)})
    break_even = {m: stats.break_even(pts) for m, pts in points.items()}
    for row in rows:
        found = stats.warnings_for(row.pop("_samples"), spread=row.pop("_spread"), acceptance=row["acceptance"],
                                   speedup=row["speedup"], sweep_break_even=break_even.get(row["method"]),
                                   drafted=row.pop("_drafted"), accepted=row.pop("_accepted"))
        row["warning_messages"] = [w.message for w in found]
        row["warnings"] = ",".join(w.code for w in found) or None
        row["ci95"] = _interval(row["ci_low"], row["ci_high"])
        row["speedup_ci95"] = _interval(row["speedup_low"], row["speedup_high"], digits=3)
        row["break_even"] = break_even.get(row["method"])
        # Decode speed as a share of the bandwidth bound (bandwidth / bytes read per decode step, the target's).
        row["roofline_pct"] = 100 * row["decode_tps"] / row["bound_tps"] if row["decode_tps"] and row["bound_tps"] \
            else None
    return rows


def _spread(ok: list[dict], per_request: dict) -> list[float] | None:
    if ok and ok[0]["mode"] == "server":
        return [tps for r in ok for tps in per_request.get(r["run_id"], {}).values()]
    return None


def _interval(low, high, digits: int = 1) -> str | None:
    return None if low is None or high is None else f"{low:.{digits}f}-{high:.{digits}f}"


def warning_lines(rows: list[dict]) -> list[str]:
    return [f"{r['arm']}: {msg}" for r in rows for msg in r.get("warning_messages", [])]
