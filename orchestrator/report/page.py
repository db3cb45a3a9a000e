"""`orch report`: a markdown page with the environment, the summary tables and PNG plots beside it.

Inputs are plain rows, so the caller chooses the SQL:
- summary_rows: one per (sweep, build, arm), as analyze/summary.arm_rows gives them (sweep, build, arm,
  decode_tps with ci_low/ci_high, acceptance, speedup, ...); every column is shown, so roofline columns appear
  when present. The decode plot's bars and intervals are these rows' (one definition of an arm's interval).
- runs: one per run, as the run_summary view gives them (sweep_id, arm, status, decode_tps): each ok run is
  drawn as a dot beside its arm's bar, so the spread is shown, not only its summary.
- telemetry: the samples of one chosen run (telemetry.Sample fields as dicts; with several run_id
  values only the first run's are drawn).
- compare_rows: head-vs-base rows from compare.compare, shown as a table (its COMPARE_COLUMNS when
  present) when given.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from orchestrator import tables
from orchestrator.analyze.summary import for_display
from orchestrator.machine import envinfo
from orchestrator.machine.telemetry import Sample, summarize
from orchestrator.report import plots
from orchestrator.report.plots import ArmInterval

REPORT = "report.md"
HIDDEN = ("ci_low", "ci_high", "params")  # ci95 shows the bounds; parameters that differ have their own columns
COMPARE_COLUMNS = ("arm", "base_n", "head_n", "base_mean", "head_mean", "ratio", "ratio_low", "ratio_high",
                   "p_value", "verdict")  # compare.compare's readable columns; its key hashes stay out


def write_report(out_dir: Path, *, env: dict, summary_rows: list[dict], runs: list[dict],
                 telemetry: list[dict] | None = None, compare_rows: list[dict] | None = None,
                 title: str = "orch report", verdicts: list[str] | None = None) -> Path:
    """Write out_dir/report.md and its PNGs; return the markdown's path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    arms = arm_intervals(summary_rows, runs)
    chosen = _one_run(telemetry or [])
    run_label = f"run {chosen[0]['run_id']}" if chosen and chosen[0].get("run_id") is not None else "one run"
    images = {
        "decode": plots.decode_tps(arms, out_dir / "decode_tps.png"),
        "acceptance": plots.acceptance_speedup(summary_rows, out_dir / "acceptance_speedup.png"),
        "builds": plots.builds(labelled_by_params(summary_rows), out_dir / "builds.png"),
        "telemetry": plots.telemetry(chosen, out_dir / "telemetry.png", f"Telemetry, {run_label}"),
    }
    sections = [f"# {title}", "", f"Generated {datetime.now(timezone.utc).isoformat(timespec='seconds')}.", ""]
    if verdicts:
        sections += ["## Verdict", "", *[f"- {v}" for v in verdicts], ""]
    sections += _summary_section(summary_rows, arms, images)
    if images["acceptance"]:
        sections += ["## Acceptance and speedup", "", "Points above the dashed line beat the baseline.", "",
                     _image(images["acceptance"], "acceptance against speedup"), ""]
    if images["builds"] or compare_rows:
        sections += ["## Head vs base", ""]
        sections += [_image(images["builds"], "decode tok/s per build"), ""] if images["builds"] else []
        columns = [c for c in COMPARE_COLUMNS if any(c in r for r in compare_rows or [])] or None
        sections += [markdown_table(compare_rows, columns), ""] if compare_rows else []
    if chosen:
        summary = summarize([Sample(**_sample_fields(r)) for r in chosen])
        sections += [f"## Telemetry ({run_label})", "", _figures_table(summary), ""]
        sections += [_image(images["telemetry"], "telemetry over time"), ""] if images["telemetry"] else []
    sections += ["## Environment", "", _demote(envinfo.to_markdown(env))]
    path = out_dir / REPORT
    path.write_text("\n".join(sections).rstrip() + "\n")
    return path


def labelled_by_params(rows: list[dict]) -> list[dict]:
    """Rows whose `arm` also names the parameters that differ between rows of that arm name, so a plot that groups
    by arm never pools runs of different parameters (two sweeps' `draft` at draft_max 8 and 16 stay apart)."""
    by_name: dict[str, list[dict]] = {}
    for r in rows:
        by_name.setdefault(str(r.get("arm")), []).append(r)
    out = []
    for r in rows:
        same = by_name[str(r.get("arm"))]
        params = r.get("params") or {}
        differing = [k for k in params if len({str((o.get("params") or {}).get(k)) for o in same}) > 1]
        suffix = " ".join(f"{k}={params[k]}" for k in differing)
        out.append({**r, "arm": f"{r.get('arm')} {suffix}" if suffix else r.get("arm")})
    return out


def arm_intervals(summary_rows: list[dict], runs: list[dict]) -> list[ArmInterval]:
    """Per summary row (sweep, arm): its mean and 95% interval as analyze/summary computed them, and the ok
    runs' decode tok/s of that sweep and arm as dots. One run has no spread: a zero-width bar says so."""
    dots: dict[tuple, list[float]] = {}
    for r in runs:
        if r.get("status", "ok") == "ok" and r.get("decode_tps") is not None:
            dots.setdefault((r.get("sweep_id"), str(r.get("arm"))), []).append(float(r["decode_tps"]))
    arms = []
    for row in summary_rows:
        mean = row.get("decode_tps")
        arms.append(ArmInterval(build=plots.build_of(row), arm=str(row.get("arm")),
                                is_baseline=bool(row.get("is_baseline")) or row.get("arm") == "baseline",
                                values=dots.get((row.get("sweep"), str(row.get("arm"))), []), mean=mean,
                                ci_low=row.get("ci_low") if row.get("ci_low") is not None else mean,
                                ci_high=row.get("ci_high") if row.get("ci_high") is not None else mean))
    return arms


def markdown_table(rows: list[dict], columns: list[str] | None = None) -> str:
    """tables.render's markdown over the union of the rows' keys (rows may differ in their columns)."""
    return tables.render(rows, "md", columns or list(dict.fromkeys(c for r in rows for c in r)))


def _figures_table(summary: dict) -> str:
    """A telemetry summary as a two-column table, bytes in MiB."""
    rows = [{"figure": k.replace("_bytes", "_mib"), "value": v / 2**20 if k.endswith("_bytes") and v else v}
            for k, v in summary.items()]
    return markdown_table(rows)


def _summary_section(rows: list[dict], arms: list[ArmInterval], images: dict) -> list[str]:
    out = ["## Summary", ""]
    shown = [{k: v for k, v in r.items() if k not in HIDDEN} for r in for_display(rows)]
    out += [markdown_table(shown), ""] if rows else ["No summary rows.", ""]
    if arms:
        out += ["Decode tok/s per arm over ok runs (mean; 95% interval from the t-interval of the log speeds, never below "
                "zero):", "",
                markdown_table([{"build": a.build, "arm": a.arm, "baseline": a.is_baseline, "runs": len(a.values),
                                 "mean": a.mean, "ci_low": a.ci_low, "ci_high": a.ci_high} for a in arms]), ""]
    if images["decode"]:
        out += [_image(images["decode"], "decode tok/s per arm"), ""]
    return out


def _one_run(rows: list[dict]) -> list[dict]:
    if not rows:
        return []
    first = rows[0].get("run_id")
    return [r for r in rows if r.get("run_id") == first]


def _sample_fields(row: dict) -> dict:
    names = Sample.__dataclass_fields__
    return {k: v for k, v in row.items() if k in names}


def _image(path: Path, alt: str) -> str:
    return f"![{alt}]({path.name})"  # relative: the report and its images move together


def _demote(markdown: str) -> str:
    """The environment page under the report's "Environment" heading: its title dropped, headings one down."""
    lines = markdown.splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return "\n".join("#" + line if line.startswith("#") else line for line in lines)

