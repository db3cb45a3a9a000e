"""`orch report`: report.md, the same page as one self-contained report.html, and the PNGs beside them.

The page names everything needed to hand the result on: the verdict of each sweep; per sweep what ran (recipe,
build, host and GPU settings, model files), the arms' parameters, one table of figures, the figures of that sweep
only, the speculation cost behind each break-even, and the arms that failed, were skipped or drafted nothing,
with why; head against base per pair of builds; one run's telemetry; the environment.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from orchestrator import __version__, tables
from orchestrator.machine import envinfo
from orchestrator.machine.telemetry import Sample, summarize
from orchestrator.report import acceptance_plot, html, plots, position_plot, provenance, quality, results
from orchestrator.report.data import BuildPair, ReportData, SweepData

REPORT, REPORT_HTML = "report.md", "report.html"
# What may tell two tests of one arm name apart, besides the recipe: their parameters (compare_columns.table's
# columns); the model and recipe hashes and the raw parameter text are too long for a label.
PAIR_NAMED_BY_EXCLUDED = ("recipe_hash", "arm_params", "target_sha256", "draft_sha256")
PAIR_COLUMNS = ("base_n", "head_n", "base_mean", "head_mean", "ratio", "ratio_ci95", "p_value", "verdict")
COST_METHOD = (
    "Each point is an arm's speedup over its reference with its 95% interval. A pass drafts g tokens and verifies "
    "them in one target batch; its measured cost k, in the reference's time per token, predicts speedup(a) = "
    "(1 + g a) / k at acceptance a (dotted line), which reaches 1 at the break-even a* = (k - 1) / g (triangle). "
    "c is the drafting part of k per drafted token, where the log prints draft time; v = k - g c is the rest "
    "(verifying g + 1 tokens, sampling). With v = 1, as on a GPU whose target is memory-bound, a* = c. A "
    "break-even above 100% means no acceptance pays at this draft length and cost. `modelled` is the speedup "
    "Leviathan et al.'s model gives from the arm's tokens per pass, g and c, with verification costing what the "
    "sweep's other arms measured at this arm's batch (one target step where no other arm did), and it is shown "
    "only where the measurement bears it out (within 25% or inside the interval; - elsewhere). The table's "
    "`modelled (Leviathan)` is that figure; `modelled at 100%` is the dotted line's end."
)

POSITION_METHOD = (
    "The share of verification steps that accepted each draft position (the first drafted token is position 1), "
    "mean over each arm's ok runs, each run a faint line. mean len is 1 + accepted / steps, the tokens one target "
    "step yields; seq accept is the share of drafts accepted in full ([low, high] where some drafts were shorter "
    "than the window and the counters only bound it)."
)


def write_report(out_dir: Path, data: ReportData) -> Path:
    """Write out_dir/report.md, report.html and the PNGs; return the markdown's path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    lines = [f"# {tables.md_text(data.title)}", "", f"Generated {now} by orch {__version__}.", "", "## Verdict", ""]
    lines += [f"- {tables.md_text(sd.verdict)}" for sd in data.sweeps] + [""]
    for sd in data.sweeps:
        lines += _sweep_section(sd, out_dir)
    for pair in data.pairs:
        lines += _pair_section(pair, out_dir)
    lines += _telemetry_section(data, out_dir)
    newest = data.sweeps[-1].id if data.sweeps else None
    lines += ["## Environment", ""]
    if len(data.sweeps) > 1:
        lines += [f'As sweep {newest} found it; each sweep\'s host and GPU settings are in its "What ran" table.', ""]
    lines += [_demote(envinfo.to_markdown(data.env))]
    text = "\n".join(lines).rstrip() + "\n"
    path = out_dir / REPORT
    path.write_text(text)
    (out_dir / REPORT_HTML).write_text(html.render(text, out_dir, data.title))
    return path


def _sweep_section(sd: SweepData, out_dir: Path) -> list[str]:
    label = sd.label.removeprefix("sweep ")
    heading = f"{label}; {sd.differs}" if sd.differs else label
    out = [
        f"## Sweep {tables.md_text(heading)}",
        "",
        "### What ran",
        "",
        *provenance.what_ran(sd),
        "Model files:",
        "",
        *provenance.models_table(sd.models),
        "### Arms",
        "",
        *provenance.parameters(sd),
        "### Results",
        "",
    ]
    out += results.results_table(sd) + results.energy_note(sd)
    decode = plots.decode_per_arm(
        results.decode_bars(sd), out_dir / f"decode-sweep{sd.id}.png", sd.figure_title("decode tok/s per arm")
    )
    out += [_image(decode, f"decode tok/s per arm, sweep {sd.id}"), ""] if decode else []
    out += quality.section(sd, out_dir)
    out += ["### Acceptance, speedup and break-even", ""]
    figure = acceptance_plot.acceptance_speedup(
        results.acceptance_points(sd),
        out_dir / f"acceptance-sweep{sd.id}.png",
        sd.figure_title("acceptance against speedup"),
    )
    if figure:
        out += [COST_METHOD, "", _image(figure, f"acceptance against speedup, sweep {sd.id}"), ""]
        out += results.cost_table(sd) or [
            "No arm's step cost could be read (no generated-token counts), so no break-even.",
            "",
        ]
    else:
        out += [
            "No arm has both an acceptance and a speedup, so there is no acceptance figure; the table below "
            "says why for each arm.",
            "",
        ]
    out += _position_section(sd, out_dir)
    out += ["### Failed, skipped and idle arms", "", *provenance.not_measured(sd), ""]
    return out


def _position_section(sd: SweepData, out_dir: Path) -> list[str]:
    figure = position_plot.acceptance_by_position(
        results.position_rates(sd),
        out_dir / f"positions-sweep{sd.id}.png",
        sd.figure_title("acceptance by draft position"),
    )
    if not figure:
        return []  # no arm printed per-position rates (older builds, default verbosity): nothing to show
    return [
        "### Acceptance by draft position",
        "",
        POSITION_METHOD,
        "",
        _image(figure, f"acceptance by draft position, sweep {sd.id}"),
        "",
    ]


def _pair_section(pair: BuildPair, out_dir: Path) -> list[str]:
    rows = [dict(r) for r in pair.rows]
    keys = ["recipe", *(c for c in pair.columns if c not in ("arm", *PAIR_COLUMNS, *PAIR_NAMED_BY_EXCLUDED))]
    several_recipes = len({r.get("recipe") for r in rows}) > 1
    for r in rows:
        low, high = r.get("ratio_low"), r.get("ratio_high")
        r["ratio_ci95"] = f"[{low:.3f}, {high:.3f}]" if low is not None and high is not None else None
        r["label"] = f"{r['arm']} ({r.get('recipe')})" if several_recipes else r["arm"]
    for r in rows:  # one label, several tests: add the parameters that tell them apart
        same = [o for o in rows if o["label"] == r["label"]]
        differ = [k for k in keys if k != "recipe" and len({str(o.get(k)) for o in same}) > 1]
        r["shown"] = r["label"] + (" " + ", ".join(f"{k}={r.get(k)}" for k in differ) if differ else "")
    bars = [
        plots.RatioBar(r["shown"], r.get("ratio"), r.get("ratio_low"), r.get("ratio_high"), r["verdict"]) for r in rows
    ]
    title = f"head {pair.head} vs base {pair.base}"
    figure = plots.build_pair(
        bars, out_dir / f"builds-{pair.base}-vs-{pair.head}.png", f"{title}: decode tok/s per test"
    )
    out = [
        f"## Builds: {tables.md_text(title)}",
        "",
        "Runs join on recipe text, arm parameters, model files, prompt set and mode; a "
        "change is named only beyond 5% and statistically different.",
        "",
    ]
    out += [tables.render([{**r, "arm": r["shown"]} for r in rows], "md", ["arm", *PAIR_COLUMNS]), ""]
    return out + ([_image(figure, f"head against base, {title}"), ""] if figure else [])


def _telemetry_section(data: ReportData, out_dir: Path) -> list[str]:
    if not data.telemetry:
        return []
    label = f"run {data.telemetry_run}" if data.telemetry_run is not None else "one run"
    window = data.energy_window
    span = (window["window_start"], window["window_end"]) if window and window.get("samples") else None
    run = next((r for sd in data.sweeps for r in sd.runs if r["run_id"] == data.telemetry_run), None)
    whose = f"sweep {run['sweep_id']}, arm {run['arm']}" if run else "its sweep not in this report"
    phase = (
        "load, prompt and generation; the generation window shaded"
        if span
        else "the whole run: load, prompt and generation"
    )
    figure = plots.telemetry(
        data.telemetry, out_dir / "telemetry.png", f"Telemetry of {label} ({whose})\n{phase}", span
    )
    names = Sample.__dataclass_fields__
    summary = summarize([Sample(**{k: v for k, v in r.items() if k in names}) for r in data.telemetry])
    rows = [
        {"figure": k.replace("_bytes", "_mib"), "value": v / 2**20 if k.endswith("_bytes") and v else v}
        for k, v in summary.items()
        if v is not None
    ]  # a host without a GPU has no GPU figures to list
    if window and window.get("joules_per_token") is not None:
        rows += [
            {"figure": "generation_window_s", "value": window["seconds"]},
            {"figure": "generation_power_mean_w", "value": window["power_w"]},
            {"figure": "joules_per_token", "value": window["joules_per_token"]},
        ]
    out = [f"## Telemetry ({tables.md_text(f'{label}, {whose}')})", "", tables.render(rows, "md"), ""]
    return out + ([_image(figure, "telemetry over time"), ""] if figure else [])


def _image(path: Path, alt: str) -> str:
    return f"![{tables.md_text(alt)}]({path.name})"  # relative: the report and its images move together


def _demote(markdown: str) -> str:
    """The environment page under the report's "Environment" heading: its title dropped, headings one down."""
    lines = markdown.splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    while lines and not lines[0].strip():
        lines = lines[1:]
    return "\n".join("#" + line if line.startswith("#") else line for line in lines)
