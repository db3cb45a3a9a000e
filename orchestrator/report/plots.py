"""The report's PNG plots, drawn with matplotlib's Agg backend (no display needed).

Each function takes plain rows, writes one PNG and returns its path, or None when the rows hold
nothing to draw (a plot with no data would only mislead).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot: a headless benchmark machine has no display

import matplotlib.pyplot as plt  # noqa: E402

DPI = 110


@dataclass
class ArmInterval:
    build: str
    arm: str
    is_baseline: bool
    values: list[float] = field(default_factory=list)  # one decode tok/s per ok run
    mean: float | None = None
    ci_low: float | None = None  # the summary's 95% interval (on log speeds); equal to the mean for one run
    ci_high: float | None = None


def decode_tps(arms: list[ArmInterval], path: Path) -> Path | None:
    """(a) Mean decode tok/s per arm with 95% interval bars, every run as a dot, the baseline as a line."""
    arms = [a for a in arms if a.mean is not None]
    if not arms:
        return None
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(arms) + 2), 4.5))
    builds = list(dict.fromkeys(a.build for a in arms))
    colors = {b: f"C{i}" for i, b in enumerate(builds)}
    labelled: set[str] = set()
    for x, a in enumerate(arms):
        err = [[a.mean - a.ci_low], [a.ci_high - a.mean]]
        label = a.build if len(builds) > 1 and a.build not in labelled else None
        labelled.add(a.build)
        ax.bar(x, a.mean, color=colors[a.build], alpha=0.75, yerr=err, capsize=4, label=label)
        ax.scatter([x] * len(a.values), a.values, color="black", s=10, zorder=3)
    for build in builds:
        xs = [x for x, a in enumerate(arms) if a.build == build]
        base = next((a for a in arms if a.build == build and a.is_baseline), None)
        if base:
            ax.hlines(base.mean, min(xs) - 0.45, max(xs) + 0.45, colors="red", linestyles="--",
                      label=f"baseline {base.mean:.1f} tok/s" + (f" ({build})" if len(builds) > 1 else ""))
    labels = [a.arm if len(builds) == 1 else f"{a.arm}\n{a.build}" for a in arms]
    crowded = len(arms) > 6 or max(len(line) for label in labels for line in label.splitlines()) > 14
    ax.set_xticks(range(len(arms)), labels, rotation=30 if crowded else 0, ha="right" if crowded else "center")
    top = max([a.ci_high for a in arms] + [v for a in arms for v in a.values])
    ax.set_ylim(0, top * 1.35)  # headroom so the legend sits above the bars, not on them
    ax.set_ylabel("decode tok/s (mean, 95% interval)")
    ax.set_title("Decode speed per arm")
    ax.legend(loc="upper left", fontsize="small", ncol=2)
    return _save(fig, path)


def acceptance_speedup(rows: list[dict], path: Path) -> Path | None:
    """(b) Acceptance (x) against speedup over the baseline (y), with the break-even line at 1."""
    points = [r for r in rows if r.get("acceptance") is not None and r.get("speedup") is not None]
    if not points:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    builds = list(dict.fromkeys(build_of(r) for r in points))
    for i, build in enumerate(builds):
        mine = [r for r in points if build_of(r) == build]
        ax.scatter([100 * r["acceptance"] for r in mine], [r["speedup"] for r in mine], color=f"C{i}",
                   label=build if len(builds) > 1 else None, zorder=3)
        for r in mine:
            ax.annotate(str(r.get("arm")), (100 * r["acceptance"], r["speedup"]), fontsize=7,
                        xytext=(4, 3), textcoords="offset points")
    ax.axhline(1.0, color="red", linestyle="--", label="break-even (speedup 1)")
    ax.set_xlabel("acceptance %")
    ax.set_ylabel("speedup over its reference (control, else baseline)")
    ax.set_title("Acceptance against speedup")
    ax.legend(loc="best", fontsize="small")
    return _save(fig, path)


def builds(rows: list[dict], path: Path) -> Path | None:
    """(c) Decode tok/s per arm, one bar per build side by side; only when there are several builds."""
    names = list(dict.fromkeys(build_of(r) for r in rows if r.get("decode_tps") is not None))
    if len(names) < 2:
        return None
    arms = list(dict.fromkeys(r["arm"] for r in rows if r.get("decode_tps") is not None))
    width = 0.8 / len(names)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(arms) + 2), 4.5))
    for i, build in enumerate(names):
        values = [_mean([r["decode_tps"] for r in rows if build_of(r) == build and r["arm"] == arm
                         and r.get("decode_tps") is not None]) for arm in arms]
        xs = [x - 0.4 + width * (i + 0.5) for x in range(len(arms))]
        ax.bar(xs, [v or 0 for v in values], width, label=build, color=f"C{i}")
    ax.set_xticks(range(len(arms)), arms)
    ax.set_ylabel("decode tok/s")
    ax.set_title("Builds compared (first listed is the base)")
    ax.legend(loc="best", fontsize="small")
    return _save(fig, path)


def telemetry(rows: list[dict], path: Path, title: str) -> Path | None:
    """(d) One run's samples over time: GPU utilisation, memory and power, or host RSS and CPU without a GPU."""
    gpu = [r for r in rows if r.get("gpu") is not None]
    host = [r for r in rows if r.get("gpu") is None]
    if gpu:
        panels = [("util_pct", "GPU util %", 1), ("mem_used_bytes", "GPU memory GiB", 2**30),
                  ("power_w", "power W", 1)]
        series = gpu
    elif host:
        panels = [("rss_bytes", "RSS MiB", 2**20), ("cpu_pct", "CPU % (100 = 1 core)", 1)]
        series = host
    else:
        return None
    fig, axes = plt.subplots(len(panels), 1, figsize=(7, 2.2 * len(panels) + 0.6), sharex=True)
    for ax, (key, label, scale) in zip(axes, panels):
        top = 0.0
        for i, index in enumerate(sorted({r.get("gpu") for r in series}, key=lambda v: -1 if v is None else v)):
            pts = sorted((r["t"], r[key] / scale) for r in series if r.get("gpu") == index and r.get(key) is not None)
            if pts:
                top = max([top] + [v for _, v in pts])
                ax.plot(*zip(*pts), color=f"C{i}", marker=".", markersize=3,
                        label=f"GPU {index}" if index is not None and len(gpu) else None)
        ax.set_ylabel(label)
        ax.set_ylim(0, top * 1.1 or 1)  # from zero: a 2% wobble must not look like a collapse
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("seconds since the run started")
    if gpu and len({r["gpu"] for r in gpu}) > 1:
        axes[0].legend(fontsize="small")
    fig.suptitle(title)
    return _save(fig, path)


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)  # pyplot keeps every open figure alive otherwise
    return path


def build_of(row: dict) -> str:
    return str(row.get("build") or row.get("build_name") or "build")


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None
