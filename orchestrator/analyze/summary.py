"""Per-arm summaries of stored sweeps: intervals, speedup against each arm's reference (its control, else the
baseline) paired by repeat (and prompt in server mode), the roofline share, and the fixed set of warnings.

Input is what store/queries gives: one group per (sweep, arm) with decode-speed moments, the paired log ratios,
and the server runs' per-request rates. `arm_rows(con, ids)` is the one call that reads them.
"""

from __future__ import annotations

import json
from functools import lru_cache
from itertools import groupby

from orchestrator import tables
from orchestrator.analyze import stats
from orchestrator.analyze.derived import roofline_pct
from orchestrator.store import queries

TABLE_COLUMNS = ["sweep", "recipe", "build", "arm", "ok", "decode_tps", "ci95", "cv", "acceptance", "draft_per_gen",
                 "speedup", "speedup_ci95", "vs", "prompt_tps", "bound_tps", "roofline_pct", "warnings"]


def arm_rows(con, sweep_ids: list[int]) -> list[dict]:
    """The summary rows of the sweeps, in sweep order, arms in the order they first ran."""
    pairs, baseline_pairs = queries.arm_pairs(con, sweep_ids)
    return summarize(queries.arm_groups(con, sweep_ids), pairs, queries.arm_request_rates(con, sweep_ids),
                     baseline_pairs)


def summarize(groups: list[dict], pairs: dict[tuple, tuple], request_rates: dict[tuple, list[float]],
              baseline_pairs: dict[tuple, tuple] | None = None) -> list[dict]:
    """groups: store/queries.arm_groups; pairs: arm_pairs (log ratios to each arm's reference: its control, or
    the baseline); request_rates: server arms' per-request speeds; baseline_pairs: log ratios to the baseline,
    for arms whose reference is a control (the cross-program figure, kept visible as such)."""
    out = []
    for _, sweep_groups in groupby(groups, key=lambda g: g["sweep_id"]):
        out += _sweep_rows(list(sweep_groups), pairs, request_rates, baseline_pairs or {})
    return out


def _sweep_rows(groups: list[dict], pairs: dict, request_rates: dict, baseline_pairs: dict) -> list[dict]:
    rows, points = [], {}
    base = next((g["arm"] for g in groups if g["is_baseline"]), None)
    for g in groups:
        values = g["ok_decode_tps"] or []
        d = stats.from_moments(g["n"], g["mean_tps"], g["sd_tps"])
        paired = pairs.get((g["sweep_id"], g["arm"])) if not g["is_baseline"] else None
        speed = stats.speedup_from_log_ratios(*paired) if paired else None
        against_control = g["reference_arm"] not in (None, base) and not g["is_control"]
        across = baseline_pairs.get((g["sweep_id"], g["arm"])) if against_control else None
        cross = stats.speedup_from_log_ratios(*across) if across else None
        params = _params(g["params"])
        method = params.get("spec", "draft")
        if speed and g["acceptance"] is not None:
            points.setdefault(method, []).append((g["acceptance"], speed.ratio))
        rows.append({"sweep": g["sweep_id"], "recipe": g["recipe"], "build": g["build"], "arm": g["arm"],
                     "is_baseline": bool(g["is_baseline"]), "method": method, "params": params,
                     "ok": f"{g['ok']}/{g['runs']}", "runs": g["runs"], "n": d.n, "decode_tps": d.mean,
                     **dict(zip(("ci_low", "ci_high"), stats.log_interval(g["n_log"], g["mean_log_tps"],
                                                                          g["sd_log_tps"]))),
                     "stdev": d.stdev, "cv": d.cv,
                     "acceptance": g["acceptance"], "draft_per_gen": g["draft_per_gen"],
                     "speedup": 1.0 if g["is_baseline"] and g["ok"] else speed.ratio if speed else None,
                     "vs": g["reference_arm"] or (None if g["is_baseline"] else base),
                     "is_control": bool(g["is_control"]),
                     "speedup_vs_baseline": cross.ratio if cross else None,  # across programs: not speculation alone
                     "ok_runs": g["ok"], "idle": g["idle"], "failed": g["failed"], "skipped": g["skipped"],
                     "speedup_low": speed.ci_low if speed else None, "speedup_high": speed.ci_high if speed else None,
                     "prompt_tps": g["prompt_tps"], "bound_tps": g["bound_tps"], "bound_label": g["bound_label"],
                     "failures": ",".join(g["failures"] or []) or None,
                     "_samples": values, "_spread": request_rates.get((g["sweep_id"], g["arm"])),
                     "_drafted": g["drafted"], "_accepted": g["accepted"]})
    break_even = {m: stats.break_even(pts) for m, pts in points.items()}
    for row in rows:
        found = stats.warnings_for(row.pop("_samples"), spread=row.pop("_spread"), acceptance=row["acceptance"],
                                   speedup=row["speedup"], sweep_break_even=break_even.get(row["method"]),
                                   drafted=row.pop("_drafted"), accepted=row.pop("_accepted"), cv=row["cv"],
                                   idle=row["idle"], ok=row["ok_runs"])
        if row["idle"] and row["idle"] == row["ok_runs"]:  # it never speculated: its ratio is no speculation result
            row["speedup_without_drafts"] = row["speedup"]
            row["speedup"] = row["speedup_low"] = row["speedup_high"] = None
        row["warning_messages"] = [w.message for w in found]
        row["warnings"] = ",".join(w.code for w in found) or None
        row["ci95"] = _interval(row["ci_low"], row["ci_high"])
        row["speedup_ci95"] = _interval(row["speedup_low"], row["speedup_high"], digits=3)
        row["break_even"] = break_even.get(row["method"])
        # Decode speed as a share of the bandwidth bound (bandwidth / bytes read per decode step, the target's).
        row["roofline_pct"] = roofline_pct(row["decode_tps"] or None, row["bound_tps"])
    return rows


@lru_cache(maxsize=4096)
def _params(text: str | None) -> dict:
    """An arm's rendered parameters (shared between rows: read, never changed); each distinct text parsed once."""
    return json.loads(text or "{}")


def table_columns(rows: list[dict]) -> list[str]:
    """TABLE_COLUMNS with, after `arm`, one column per parameter whose value differs between the rows: what
    tells the arms apart (and two sweeps' arms of one name, run with other parameters)."""
    # Rows share their parameter dicts (see _params): decide on the distinct sets of them a sweep has, not per row.
    distinct, by_sweep = {}, {}
    for row in rows:
        distinct[id(row["params"])] = row["params"]
        by_sweep.setdefault(row["sweep"], set()).add(id(row["params"]))
    shapes = {frozenset(ids) for ids in by_sweep.values()}
    names = list(dict.fromkeys(k for p in distinct.values() for k in p))
    varying = [k for k in names if _varies(distinct, shapes, k)]
    for row in rows:
        for k in varying:
            row[_param_column(k)] = row["params"].get(k)
    i = TABLE_COLUMNS.index("arm") + 1
    return [*TABLE_COLUMNS[:i], *(_param_column(k) for k in varying), *TABLE_COLUMNS[i:]]


def table_text(rows: list[dict], fmt: str = "table") -> str:
    """The arm table as every command shows it (table or md): the parameter columns that tell arms apart, shares
    as percentages."""
    columns = table_columns(rows)  # adds the parameter columns to the rows: before for_display copies them
    return tables.render(for_display(rows), fmt, columns)


def _varies(distinct: dict[int, dict], shapes: set[frozenset[int]], name: str) -> bool:
    """Whether parameter `name` tells arms apart: two values where it is set, or set and unset within one sweep
    (a parameter that only another recipe has is no difference between arms). distinct: the parameter dicts by
    id; shapes: the sets of them that occur together in a sweep."""
    text = {i: json.dumps(p[name], sort_keys=True, default=str) if name in p else None for i, p in distinct.items()}
    return len(set(text.values()) - {None}) > 1 or any(len({text[i] for i in shape}) > 1 for shape in shapes)


def _param_column(name: str) -> str:
    return f"param.{name}" if name in TABLE_COLUMNS or name in ("params", "method") else name


def _interval(low, high, digits: int = 1) -> str | None:
    """An interval as every table and message prints one: [low, high]."""
    return None if low is None or high is None else f"[{low:.{digits}f}, {high:.{digits}f}]"


PERCENT_COLUMNS = ("acceptance", "cv")  # shares of 1, shown as percentages


def for_display(rows: list[dict]) -> list[dict]:
    """Rows for the table and markdown views: shares as percentages (47.1%), the roofline share likewise.
    JSON and CSV keep the plain numbers."""
    out = []
    for row in rows:
        shown = dict(row)
        for key in PERCENT_COLUMNS:
            if isinstance(row.get(key), float):
                shown[key] = f"{100 * row[key]:.1f}%"
        if isinstance(row.get("roofline_pct"), float):
            shown["roofline_pct"] = f"{row['roofline_pct']:.1f}%"
        out.append(shown)
    return out


def warning_lines(rows: list[dict]) -> list[str]:
    return [f"{r['arm']}: {msg}" for r in rows for msg in r.get("warning_messages", [])]
