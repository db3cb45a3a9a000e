"""A sweep's figures as markdown tables: one row per arm (speed, acceptance, speedup, energy), the speculation
cost behind each break-even, and what the energy figures are; and the rows its plots draw."""

from __future__ import annotations

import json

from orchestrator import tables
from orchestrator.analyze import cells
from orchestrator.report.acceptance_plot import Point, break_even_text
from orchestrator.report.data import SweepData
from orchestrator.report.plots import ArmBar
from orchestrator.report.position_plot import ArmRates

ENERGY_METHOD = (
    "J/token: GPU energy per generated token, the mean power of the GPUs a run kept busy over its "
    "generation window (its last tokens / decode tok/s seconds; load and prompt processing are left "
    "out, the GPUs' idle draw is in) times the window's length, per token (view `run_energy`); mean "
    "over the arm's runs with a 95% interval."
)


# The summary's columns under the report's titles: their cells are the summary table's (analyze/cells.texts), so
# `orch report` and `orch summary` print the same digits for an arm.
SUMMARY_CELLS = {
    "ok": "ok",
    "decode tok/s": "decode_tps",
    "95% interval": "ci95",
    "cv": "cv",
    "acceptance": "acceptance",
    "draft/gen": "draft_per_gen",
    "speedup": "speedup",
    "speedup 95%": "speedup_ci95",
    "predicted before": "predicted",
    "predicted 95%": "predicted_ci95",
    "prompt tok/s": "prompt_tps",
    "roofline": "roofline_pct",
    "J/token": "joules_per_token",
    "warnings": "warnings",
}
COLUMNS = [
    "#",
    "arm",
    "ok",
    "decode tok/s",
    "95% interval",
    "cv",
    "acceptance",
    "draft/gen",
    "speedup",
    "speedup 95%",
    "predicted before",
    "predicted 95%",
    "vs",
    "prompt tok/s",
    "roofline",
    "J/token",
    "J/token 95%",
    "GPU W",
    "warnings",
]


def results_table(sd: SweepData) -> list[str]:
    numbers, rows = sd.numbers, sd.rows
    shown = {title: cells.texts(rows, column) for title, column in SUMMARY_CELLS.items()}
    shown |= {
        "#": [numbers[r["arm"]] for r in rows],
        "arm": [r["arm"] for r in rows],
        "vs": [f"#{numbers[r['vs']]}" if r.get("vs") in numbers else r.get("vs") for r in rows],
        "J/token 95%": [
            tables.interval(r.get("joules_per_token_low"), r.get("joules_per_token_high"), 3) for r in rows
        ],
        "GPU W": [r.get("power_w") for r in rows],
    }
    # A column only where some arm has a value (# arm and ok always).
    values = shown | {title: [r.get(column) for r in rows] for title, column in SUMMARY_CELLS.items()}
    columns = [c for c in COLUMNS if c in ("#", "arm", "ok") or any(v is not None for v in values[c])]
    return [tables.markdown_columns(shown, columns), ""]


def energy_note(sd: SweepData) -> list[str]:
    measured = [r for r in sd.rows if r.get("joules_per_token") is not None]
    gpus = (sd.sweep.get("env") or {}).get("gpus")
    if measured:
        fewest = min(r.get("energy_samples_min") or 0 for r in measured)
        rough = (
            f" The fewest power samples in one run's window is {fewest}: with under 3 the figure is rough "
            f"(NVML averages power over up to a second); raise n_predict or lower --telemetry-interval."
            if fewest < 3
            else ""
        )
        return [ENERGY_METHOD + rough, ""]
    if any(r.get("energy_gpu_idle_runs") for r in sd.rows):
        return [
            "No energy per token: the GPUs idled while the runs generated (a CPU build on a machine with a "
            "GPU), so their draw is not these runs' energy (CPU power is not read).",
            "",
        ]
    if any(r.get("energy_runs") == 0 for r in sd.rows):
        return [
            "No energy per token: GPU power was sampled, but no sample fell inside a generation window "
            "(generation shorter than the telemetry interval); raise n_predict.",
            "",
        ]
    if gpus:
        return [
            "No energy per token: no GPU power samples were stored (telemetry off, or the GPUs report no power).",
            "",
        ]
    return [
        "No energy per token: orch reads power from NVIDIA GPUs (NVML), and this host had none in use "
        "(CPU power is not read).",
        "",
    ]


def cost_table(sd: SweepData) -> list[str]:
    numbers, rows = sd.numbers, []
    for r in sd.rows:
        c = sd.costs.get(r["arm"])
        if c is None:
            continue
        rows.append(
            {
                "#": numbers[r["arm"]],
                "arm": r["arm"],
                "acceptance": _pct(r.get("acceptance")),
                "drafted per pass g": c.draft_length,
                "pass cost k": c.pass_cost,
                "draft cost c": c.draft_cost,
                "rest of pass v": c.verify_cost,
                "break-even": break_even_text(c),
                "modelled at 100%": _ratio(c.speedup_at(1.0)),
                "modelled (Leviathan)": _ratio(
                    c.checked_model(r.get("speedup"), r.get("speedup_low"), r.get("speedup_high"))
                ),
                "measured": _ratio(r.get("speedup")),
            }
        )
    if not rows:
        return []
    return [tables.render(rows, "md"), ""]


def decode_bars(sd: SweepData) -> list[ArmBar]:
    numbers, dots = sd.numbers, {}
    for run in sd.runs:
        if run.get("status") == "ok" and run.get("decode_tps") is not None:
            dots.setdefault(run["arm"], []).append(float(run["decode_tps"]))
    return [
        ArmBar(
            number=numbers[r["arm"]],
            arm=r["arm"],
            is_baseline=bool(r.get("is_baseline")),
            is_control=bool(r.get("is_control")),
            values=dots.get(r["arm"], []),
            mean=r.get("decode_tps"),
            ci_low=r.get("ci_low"),
            ci_high=r.get("ci_high"),
            note=_missing_runs(r),
        )
        for r in sd.rows
    ]


def acceptance_points(sd: SweepData) -> list[Point]:
    numbers = sd.numbers
    return [
        Point(
            number=numbers[r["arm"]],
            arm=r["arm"],
            acceptance=r.get("acceptance"),
            speedup=r.get("speedup"),
            low=r.get("speedup_low"),
            high=r.get("speedup_high"),
            cost=sd.costs.get(r["arm"]),
            note=_no_point(r, numbers),
        )
        for r in sd.rows
    ]


def position_rates(sd: SweepData) -> list[ArmRates]:
    """Every arm of the sweep, with the per-position rates of its ok runs where they were read."""
    numbers, rates = sd.numbers, {}
    for run in sd.runs:
        found = run.get("accept_rate_per_pos")
        found = json.loads(found) if isinstance(found, str) else found
        if run.get("status") == "ok" and found and all(isinstance(v, (int, float)) for v in found):
            rates.setdefault(run["arm"], []).append([float(v) for v in found])
    return [
        ArmRates(
            number=numbers[r["arm"]],
            arm=r["arm"],
            runs=rates.get(r["arm"], []),
            mean_accept_len=r.get("mean_accept_len"),
            seq_acceptance=r.get("seq_acceptance"),
            seq_low=r.get("seq_acceptance_low"),
            seq_high=r.get("seq_acceptance_high"),
            note=_no_rates(r),
        )
        for r in sd.rows
    ]


def _no_rates(row: dict) -> str | None:
    if row.get("is_baseline") or row.get("is_control"):
        return "drafts nothing: no positions"
    if not row.get("ok_runs"):
        return _missing_runs(row) or "no ok run"
    if row.get("idle"):
        return "drafted nothing"
    if row.get("acceptance") is None:
        return "not speculative (no acceptance)"
    return "no per-position rates in its logs (the statistics line needs -lv 4; older builds print none)"


def _missing_runs(row: dict) -> str | None:
    """Why an arm has no bar, which of its runs are not in it, or that its runs drafted nothing."""
    notes = []
    if lost := [f"{row[k]} {k}" for k in ("failed", "skipped") if row.get(k)]:
        notes.append(
            f"{', '.join(lost)} of {row.get('runs')}" + (f" ({row['failures']})" if row.get("failures") else "")
        )
    if row.get("idle"):
        notes.append(f"drafted nothing in {row['idle']} of {row.get('ok_runs')} ok runs")
    if notes:
        return "; ".join(notes)
    return "no ok run" if row.get("decode_tps") is None else None


def _no_point(row: dict, numbers: dict[str, int]) -> str | None:
    if row.get("acceptance") is not None and row.get("speedup") is not None:
        return None
    if row.get("is_baseline"):
        return "the baseline: speedup 1 by definition"
    if row.get("is_control"):
        ratio = f", runs at {row['speedup']:.2f}x the baseline" if row.get("speedup") is not None else ""
        return f"control: drafts nothing{ratio}"
    if not row.get("ok_runs"):
        return _missing_runs(row) or "no ok run"
    if row.get("idle"):
        return "drafted nothing: no acceptance, no speedup"
    if row.get("acceptance") is None:
        return "no acceptance (drafted nothing, or not speculative)"
    vs = row.get("vs")
    return f"no speedup: its reference {'#' + str(numbers[vs]) if vs in numbers else vs} has no paired ok run"


def _pct(share, scale: float = 100) -> str | None:
    """A share of 1 (scale 100) or a value already in percent (scale 1) as `47.1%`."""
    return None if share is None else f"{scale * share:.1f}%"


def _ratio(value) -> str | None:
    return None if value is None else f"{value:.3f}x"
