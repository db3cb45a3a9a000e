"""`orch history`: one recipe arm's metric per build, in commit order, with the steps between neighbours.

Every sweep of the recipe on a build pools into that build's point (mean and 95% t-interval of the ok runs). Two
neighbouring builds differ by a step when `orch compare`'s rule says so: beyond the threshold *and* statistically
different (analyze/compare, the same code). Commit order is the commits' committer dates in the mirror (sdist
imports keep the real upstream commit and date); a build the mirror lacks goes by when its first sweep ran.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.analyze import metric_samples, side_by_side, stats
from orchestrator.errors import NoHistory
from orchestrator.report.plots import plt  # headless, text never read as TeX
from orchestrator.source.mirror import Mirror
from orchestrator.store import bisect_queries
from orchestrator.tables import interval

COLUMNS = ["build", "commit", "date", "sweeps", "n", "mean", "ci95", "vs_previous", "step"]
DPI = 110


def points(con, recipe: str, arm: str, metric: str, builds: list[str] | None, mirror: Mirror) -> list[dict]:
    """One point per build that ran the recipe's arm with the metric, oldest commit first."""
    sweeps = bisect_queries.recipe_sweeps(con, recipe, builds)
    by_build: dict[str, list[dict]] = {}
    for s in sweeps:
        by_build.setdefault(s["build_name"], []).append(s)
    out = []
    for name, group in by_build.items():
        ids = [s["sweep_id"] for s in group]
        samples, runs, failed = metric_samples.arm_samples(con, ids, arm, metric)
        if not samples:
            continue
        d = stats.describe(samples)
        out.append(
            {
                "build": name,
                "commit": group[0]["upstream_commit"],
                "sweeps": len(ids),
                "samples": samples,
                "n": d.n,
                "mean": d.mean,
                "ci_low": d.ci_low,
                "ci_high": d.ci_high,
                "failed": failed,
                "first_sweep": str(group[0]["started_at"]),
            }
        )
    if not out:
        asked = f" on {', '.join(builds)}" if builds else ""
        raise NoHistory(
            f"no stored ok runs of arm {arm} of {recipe} with {metric}{asked}; run the recipe on some "
            f"builds first (orch run {recipe} --build COMMIT), or check the arm name"
        )
    dates = _commit_dates(mirror, [p["commit"] for p in out])
    for p in out:
        p["date"] = dates.get(p["commit"], "")
    return sorted(out, key=lambda p: (p["date"] or p["first_sweep"], p["first_sweep"]))


def _commit_dates(mirror: Mirror, commits: list[str]) -> dict[str, str]:
    known = [c for c in commits if mirror.resolve(c)]
    if not known:
        return {}
    res = mirror.git("log", "--no-walk=unsorted", "--format=%H %cI", *known)
    listed = dict(line.split(" ", 1) for line in res.stdout.splitlines()) if res.ok else {}
    return {c: listed.get(mirror.resolve(c), "") for c in known}


def mark_steps(points: list[dict], threshold: float) -> list[str]:
    """Compare each point with the one before (compare's rule); put vs_previous/step on it; one line per step."""
    lines = []
    for before, after in zip(points, points[1:]):
        row = side_by_side.compare_sides(
            {("m",): side_by_side.Side(samples=before["samples"])},
            {("m",): side_by_side.Side(samples=after["samples"])},
            threshold=threshold,
        )[0]
        after["ratio"], after["verdict"] = row["ratio"], row["verdict"]
        after["step"] = row["verdict"] in (side_by_side.REGRESSION, side_by_side.IMPROVEMENT)
        if after["step"]:
            ci = interval(row["ratio_low"], row["ratio_high"], 3)
            lines.append(
                f"step: {before['build']} -> {after['build']}: {row['verdict']}, "
                f"{row['ratio']:.3f}x{' ' + ci if ci else ''} (threshold {threshold:.0%}, {row['test']})"
            )
    return lines


def rows(points: list[dict]) -> list[dict]:
    digits = 3 if any(abs(p["mean"]) < 10 for p in points) else 1
    return [
        {
            "build": p["build"],
            "commit": p["commit"][:9],
            "date": (p["date"] or "")[:10],
            "sweeps": p["sweeps"],
            "n": p["n"],
            "mean": round(p["mean"], digits),
            "ci95": interval(p["ci_low"], p["ci_high"], digits),
            "vs_previous": f"{p['ratio']:.3f}x" if p.get("ratio") else None,
            "step": p.get("verdict") if p.get("step") else None,
        }
        for p in points
    ]


def draw(points: list[dict], recipe: str, arm: str, metric: str, path: Path) -> Path:
    """figure(...) saved as a PNG at path."""
    fig = figure(points, recipe, arm, metric)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def figure(points: list[dict], recipe: str, arm: str, metric: str):
    """Mean per build with its 95% interval as a bar, each run as a dot; a step is a red marker and label. The axis
    starts at zero (every metric here is a rate, a share or a time): spanning only the values drawn, it made two
    builds' acceptance 1.4 points apart look like a cliff."""
    fig, ax = plt.subplots(figsize=(max(5.0, 1.0 + 0.9 * len(points)), 4.0), dpi=DPI)
    xs = range(len(points))
    for x, (p, before) in enumerate(zip(points, [None, *points])):
        ax.scatter([x] * len(p["samples"]), p["samples"], s=10, color="lightgray", zorder=1)
        if p["ci_low"] is not None:
            ax.errorbar(
                [x],
                [p["mean"]],
                yerr=[[p["mean"] - p["ci_low"]], [p["ci_high"] - p["mean"]]],
                fmt="o",
                color="tab:blue",
                capsize=4,
                zorder=2,
            )
        else:
            ax.plot([x], [p["mean"]], "o", color="tab:blue", zorder=2)
        if p.get("step"):
            ax.axvline(x - 0.5, color="tab:red", linestyle="--", linewidth=1)
            ax.annotate(
                f"{p['verdict']}\n{p['ratio']:.2f}x",
                (x - 0.5, (p["mean"] + before["mean"]) / 2),
                color="tab:red",
                fontsize=8,
                ha="center",
                va="center",
                backgroundcolor="white",
            )
    ax.set_xticks(list(xs), [f"{p['commit'][:9]}\n{(p['date'] or '')[:10]}" for p in points], fontsize=8)
    ax.set_ylabel(metric)
    ax.set_title(f"{Path(recipe).name}, arm {arm}:\n{metric} by commit (95% intervals)", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    drawn = [v for p in points for v in [*p["samples"], p["ci_low"], p["ci_high"]] if v is not None]
    if min(drawn) >= 0:
        ax.set_ylim(0, max(drawn) * 1.1 or 1)  # room above the highest point
    fig.tight_layout()
    return fig
