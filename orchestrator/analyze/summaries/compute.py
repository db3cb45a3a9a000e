"""Per-arm summaries of stored sweeps: intervals, speedup against each arm's reference (its control, else the
baseline) paired by repeat (and prompt in server mode), the roofline share, and the fixed set of warnings.

The numbers come grouped from store/queries.arm_summaries (one SQL pass over every sweep asked for, never a scan
per sweep); this module puts the 95% intervals on its moments (analyze/stats, as `orch compare` and `orch tune` do),
names them, applies the per-sweep rules (break-even, reference arm, arms that drafted nothing) and the warnings.
`arm_rows(con, ids)` is the one call that reads them.
"""

from __future__ import annotations

import gc
import json
from contextlib import contextmanager
from functools import lru_cache
from itertools import groupby

from orchestrator import config, tables
from orchestrator.analyze import costs, glossary, quality, stats, time_split, warnings
from orchestrator.store import db, queries

NO_ENERGY = dict.fromkeys(costs.Energy(None, None, None, 0, None, None).fields())  # no power sampled: no figures
# The table's columns, in order: those the glossary means (a new column is its figure in store/arm_queries.py and its
# meaning, at its place, in analyze/glossary.SUMMARY; analyze/cells.py only where it is shown other than as a number)
TABLE_COLUMNS = [c for c in glossary.SUMMARY if c != glossary.PARAMETER]
# The default table: the columns that answer "is speculation faster here", in WIDTH characters. Where it is wider,
# the parameter columns (after `arm`) are given up first, the last first, then GIVE_UP in its order.
DEFAULT_COLUMNS = glossary.SUMMARY_DEFAULT
# Blank where no arm has a reference (or a prediction): left out of the default table
RATIO_COLUMNS = ("speedup", "speedup_ci95", "predicted", "predicted_ci95", "vs")
GIVE_UP = ["predicted_ci95", "ci95", "vs", "ok", "warnings", "acceptance"]
WIDTH = 120


def arm_rows(con, sweep_ids: list[int]) -> list[dict]:
    """The summary rows of the sweeps, in sweep order, arms in the order they were first tried, with energy per token
    where GPU power was sampled (analyze/costs.Energy.fields; None elsewhere, so every row has the keys), and the
    speedup Leviathan et al.'s model predicts from the arm's measured step cost (analyze/costs; None where it
    drafted nothing, its logs give no draft time, or the measured speedup does not bear it out)."""
    return arm_rows_and_costs(con, sweep_ids)[0]


def arm_rows_and_costs(con, sweep_ids: list[int]) -> tuple[list[dict], dict[tuple[int, str], costs.StepCost]]:
    """arm_rows, and the step costs its predicted speedups come from, per (sweep, arm): the report draws both.
    con: with nothing uncommitted (energy and draft costs are read on a second connection to its database)."""
    with collector_paused():
        return _rows_and_costs(con, sweep_ids)


@contextmanager
def collector_paused():
    """Python's cycle collector paused for the block. A summary of 47k arms makes millions of objects (none in a
    cycle), and each full collection walks every one of them: 0.7-1 s of CPU of a 3 s summary, for nothing."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:  # what the block made goes to the oldest generation as it is: the first young collection after
            gc.freeze()  # enabling would walk every object made meanwhile (0.03 s after a summary of every sweep)
            gc.enable()
            gc.unfreeze()


def _rows_and_costs(con, sweep_ids: list[int]) -> tuple[list[dict], dict[tuple[int, str], costs.StepCost]]:
    # Energy and draft costs are read on a second connection meanwhile: their query (it parses each run's stored
    # JSON) runs in DuckDB while this thread turns the arms into Python objects, which holds one core alone.
    side = db.meanwhile(con, _energy_and_draft_costs, sweep_ids)
    rows = summarize(queries.arm_summaries(con, sweep_ids))
    energy_rows, cost_rows = side.result()
    energy = costs.arm_energy(energy_rows)
    step = costs.step_costs(cost_rows, rows)
    splits = time_split.time_splits(cost_rows, rows, step)
    measured = quality.arm_quality(con, sweep_ids)
    before = {(p["sweep_id"], p["arm"]): p for p in queries.arm_predictions(con, sweep_ids)}
    for row in rows:
        key = (row["sweep"], row["arm"])
        row.update(measured.get(key) or dict.fromkeys(quality.FIELDS))
        found = energy.get(key)
        row.update(found.fields() if found else NO_ENERGY)
        cost = step.get(key)
        row["modelled_speedup_unchecked"] = cost.modelled_speedup if cost else None  # JSON only
        row["modelled_speedup"] = (
            cost.checked_model(row["speedup"], row["speedup_low"], row["speedup_high"]) if cost else None
        )
        speculated = row["drafted"] or row["idle"]  # an arm that speculates (idle: it drafted nothing)
        row["model_withheld"] = costs.withheld(cost, row) if speculated else None  # JSON only
        _predicted_before(row, before.get(key))
        split = splits.get(key)
        row["time_split"] = split.fields() if split else None  # JSON only
        lost = split and row["speedup"] is not None and row["speedup"] < 1
        row["why_slower"] = split.sentence(row["speedup"], bool(row["draft_sha256"])) if lost else None
    return rows, step


def _predicted_before(row: dict, predicted: dict | None) -> None:
    """The speedup predicted before the arm ran (run/predictions, stored at the sweep's start) beside what it
    measured, always, right or wrong; a measurement outside its interval is warned of, naming the input that was
    off (analyze/warnings.outside_prediction). JSON: predicted, predicted_low/_high, prediction_missing."""
    found = predicted or {}
    row["predicted"], row["predicted_low"], row["predicted_high"] = (found.get(k) for k in ("predicted", "low", "high"))
    row["predicted_ci95"] = tables.interval(row["predicted_low"], row["predicted_high"], digits=2)
    row["prediction_missing"] = found.get("missing")
    warned = warnings.outside_prediction(row["speedup"], predicted, row["mean_accept_len"])
    if warned:
        row["warning_messages"].append(warned.message)
        row["warnings"] = ",".join(filter(None, (row["warnings"], warned.code)))


def _energy_and_draft_costs(cursor, sweep_ids: list[int]) -> tuple[list[dict], list[dict]]:
    return queries.arm_energy(cursor, sweep_ids), queries.arm_draft_costs(cursor, sweep_ids)


def summarize(groups: list[dict]) -> list[dict]:
    """groups: store/queries.arm_summaries, one per (sweep, arm) in sweep order; they become the rows."""
    out = []
    for _, sweep_groups in groupby(groups, key=lambda g: g["sweep"]):
        out += _sweep_rows(list(sweep_groups))
    return out


def _sweep_rows(rows: list[dict]) -> list[dict]:
    points = {}
    base = next((r["arm"] for r in rows if r["is_baseline"]), None)
    targets = {r["arm"]: r["target_sha256"] for r in rows}
    for row in rows:
        _intervals(row)
        row["params"] = params = _params(row["params"])
        row["method"] = method = params.get("spec", "draft")
        row["ok"] = f"{row['ok_runs']}/{row['runs']}"
        row["vs"] = row["reference_arm"] or (None if row["is_baseline"] else base)
        # A ratio to an arm of another target model compares models, not speculation: kept apart, never a speedup.
        mine, theirs = row["target_sha256"], targets.get(row["vs"])
        row["other_target"] = (row["vs"], mine, theirs) if mine and theirs and mine != theirs else None
        row["speedup_across_targets"] = None
        if row["other_target"]:
            row["speedup_across_targets"] = row["speedup"]
            row["speedup"] = row["speedup_low"] = row["speedup_high"] = None
        if row["speedup"] is not None and row["acceptance"] is not None:
            points.setdefault(method, []).append((row["acceptance"], row["speedup"]))
        if row["is_baseline"] and row["ok_runs"]:
            row["speedup"] = 1.0
        row["length_of"] = params.get("length_of")  # a reference at an arm's length (run/length_match): no speedup
        if row["length_of"]:
            row["speedup"] = row["speedup_low"] = row["speedup_high"] = row["speedup_vs_baseline"] = None
            row["unequal_pairs"] = 0
        # Against a control, the figure against the baseline crosses programs: kept visible as such, apart (and
        # only where the baseline decodes the same target).
        if row["reference_arm"] in (None, base) or row["is_control"] or targets.get(base) != row["target_sha256"]:
            row["speedup_vs_baseline"] = None
    break_even = {m: stats.break_even(pts) for m, pts in points.items()}
    for row in rows:
        found = warnings.warnings_for(_facts(row, break_even.get(row["method"])))
        row["speedup_without_drafts"] = None
        # It never speculated: its ratio is no speculation result. Without a draft model it decoded plainly (no
        # speedup shown); with one, the draft ran at every step for nothing, and that cost is its speedup.
        if row["idle"] and row["idle"] == row["ok_runs"] and not row["draft_sha256"]:
            row["speedup_without_drafts"] = row["speedup"]
            row["speedup"] = row["speedup_low"] = row["speedup_high"] = None
        row["warning_messages"] = [w.message for w in found]
        row["warnings"] = ",".join(w.code for w in found) or None
        row["ci95"] = _speed_interval(row["ci_low"], row["ci_high"])
        # Two decimals, as the verdict says it.
        row["speedup_ci95"] = tables.interval(row["speedup_low"], row["speedup_high"], digits=2)
        row["break_even"] = break_even.get(row["method"])
        # Decode speed as a share of the bandwidth bound (store/figures), moved here: its place in JSON and CSV.
        row["roofline_pct"] = row.pop("roofline_pct")
    return rows


def _intervals(row: dict) -> None:
    """Fills the row's 95% intervals (decode tok/s on its logs; the speedup on its paired log ratios) from the
    moments the store gathered, which leave the row: its keys stay those of the summary's JSON and CSV."""
    row["ci_low"], row["ci_high"] = stats.log_interval(row.pop("log_n"), row.pop("log_mean"), row.pop("log_sd"))
    row["speedup_low"], row["speedup_high"] = stats.log_interval(
        row["ref_pairs"], row.pop("ref_mean_log"), row.pop("ref_sd_log")
    )


def _facts(row: dict, sweep_break_even: float | None) -> warnings.ArmFacts:
    """What the warning rules read of one arm's row; the lists and the other-target triple leave the row."""
    return warnings.ArmFacts(
        runs=row.pop("ok_decode_tps") or (),
        spread=row.pop("request_rates"),
        cv=row["cv"],
        gpu=row["used_gpu"],
        ok=row["ok_runs"],
        idle=row["idle"],
        idle_draft=bool(row["draft_sha256"]),
        acceptance=row["acceptance"],
        speedup=row["speedup"],
        sweep_break_even=sweep_break_even,
        drafted=row["drafted"],
        accepted=row["accepted"],
        other_target=row.pop("other_target"),
        outputs_differ=row["outputs_differ"],
        outputs_compared=row["outputs_compared"],
        first_diff_char=row["first_diff_char"],
        first_diff_token=row["first_diff_token"],
        generated=row.get("generated_max"),
        looped=0 if row["length_of"] else row["looped"],  # a length-matched reference's loop is said of its arm
        loop_share=row["loop_share"],
        unequal_tokens=_unequal_tokens(row),
        roofline_pct=row["roofline_pct"],
        bound_tps=row["bound_tps"],
        bound_label=row["bound_label"],
        others_cpu_pct=row["others_cpu_pct"],
        busiest_other=row["busiest_other"],
        busy_pct=config.busy_pct(),
    )


def _unequal_tokens(row: dict) -> warnings.UnequalTokens | None:
    """Where some of the arm's pairs with its reference generated counts more than a token apart."""
    if not row["unequal_pairs"]:
        return None
    return warnings.UnequalTokens(
        row["unequal_pairs"],
        row["ref_pairs"],
        (row["unequal_min"], row["unequal_max"]),
        (row["unequal_ref_min"], row["unequal_ref_max"]),
    )


@lru_cache(maxsize=4096)
def _params(text: str | None) -> dict:
    """An arm's rendered parameters (shared between rows: read, never changed); each distinct text parsed once."""
    return json.loads(text or "{}")


def _speed_interval(low, high) -> str | None:
    """A speed interval to three or four figures, each end by its size: [426, 1434], [58.6, 563], [2.91, 3.47]."""
    return None if low is None or high is None else f"[{_figures(low)}, {_figures(high)}]"


def _figures(x: float) -> str:
    return f"{x:.0f}" if abs(x) >= 99.5 else f"{x:.1f}" if abs(x) >= 9.995 else f"{x:.2f}"
