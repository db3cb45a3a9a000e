"""Per-arm summaries of stored sweeps: intervals, speedup against each arm's reference (its control, else the
baseline) paired by repeat (and prompt in server mode), the roofline share, and the fixed set of warnings.

The numbers come grouped and computed from store/queries.arm_summaries (one SQL pass, so 100k stored runs take
well under a second); this module names them, applies the per-sweep rules (break-even, reference arm, arms
that drafted nothing) and the warnings. `arm_rows(con, ids)` is the one call that reads them.
"""

from __future__ import annotations

import json
from functools import lru_cache
from itertools import groupby

from orchestrator import tables
from orchestrator.analyze import costs, stats
from orchestrator.analyze.derived import roofline_pct
from orchestrator.store import queries

NO_ENERGY = dict.fromkeys(costs.Energy(None, None, None, 0, None, None).fields())  # no power sampled: no figures
TABLE_COLUMNS = ["sweep", "recipe", "build", "arm", "ok", "decode_tps", "ci95", "cv", "acceptance", "draft_per_gen",
                 "speedup", "speedup_ci95", "vs", "prompt_tps", "bound_tps", "roofline_pct", "warnings"]


def arm_rows(con, sweep_ids: list[int]) -> list[dict]:
    """The summary rows of the sweeps, in sweep order, arms in the order they first ran, with energy per token
    where GPU power was sampled (analyze/costs.Energy.fields; None elsewhere, so every row has the keys)."""
    rows = summarize(queries.arm_summaries(con, sweep_ids, stats.T975_BY_DF))
    energy = costs.arm_energy(queries.arm_energy(con, sweep_ids))
    for row in rows:
        found = energy.get((row["sweep"], row["arm"]))
        row.update(found.fields() if found else NO_ENERGY)
    return rows


def summarize(groups: list[dict]) -> list[dict]:
    """groups: store/queries.arm_summaries, one per (sweep, arm) in sweep order; they become the rows."""
    out = []
    for _, sweep_groups in groupby(groups, key=lambda g: g["sweep"]):
        out += _sweep_rows(list(sweep_groups))
    return out


def _sweep_rows(rows: list[dict]) -> list[dict]:
    points = {}
    base = next((r["arm"] for r in rows if r["is_baseline"]), None)
    for row in rows:
        row["params"] = params = _params(row["params"])
        row["method"] = method = params.get("spec", "draft")
        row["ok"] = f"{row['ok_runs']}/{row['runs']}"
        if row["speedup"] is not None and row["acceptance"] is not None:
            points.setdefault(method, []).append((row["acceptance"], row["speedup"]))
        if row["is_baseline"] and row["ok_runs"]:
            row["speedup"] = 1.0
        # Against a control, the figure against the baseline crosses programs: kept visible as such, apart.
        if row["reference_arm"] in (None, base) or row["is_control"]:
            row["speedup_vs_baseline"] = None
        row["vs"] = row["reference_arm"] or (None if row["is_baseline"] else base)
    break_even = {m: stats.break_even(pts) for m, pts in points.items()}
    for row in rows:
        found = stats.warnings_for(row.pop("ok_decode_tps") or (), spread=row.pop("request_rates"),
                                   acceptance=row["acceptance"], speedup=row["speedup"],
                                   sweep_break_even=break_even.get(row["method"]), drafted=row["drafted"],
                                   accepted=row["accepted"], cv=row["cv"], idle=row["idle"], ok=row["ok_runs"])
        row["speedup_without_drafts"] = None
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
