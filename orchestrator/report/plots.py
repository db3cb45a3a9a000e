"""The report's PNG plots, drawn with matplotlib's Agg backend (no display needed): one figure per sweep or per
pair of builds, never pooled across sweeps.

Each function takes plain rows, writes one PNG and returns its path, or None when there is nothing to draw. An
arm without a figure is never dropped: it keeps its row, marked with an x and the reason (failed, skipped, ...).
Arms are rows of a horizontal chart, so their names read across and never overlap however many there are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot: a headless benchmark machine has no display
# Text from data (arm names, prompts, model names) is drawn as it is: `$...$` in it is never read as TeX (which
# could also fail to parse and stop the report).
matplotlib.rcParams["text.parse_math"] = False

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

DPI = 110
MISSING = "dimgray"


@dataclass
class ArmBar:
    number: int
    arm: str
    is_baseline: bool = False
    is_control: bool = False
    values: list[float] = field(default_factory=list)  # one decode tok/s per ok run
    mean: float | None = None
    ci_low: float | None = None  # the summary's 95% interval; None for one run
    ci_high: float | None = None
    note: str | None = None  # why there is no bar: "failed: vocab_mismatch (2 of 2 runs)"


def interval(ax, axis: str, at: float, low: float | None, high: float | None, **style) -> None:
    """A capped segment from low to high along `axis` ("x" or "y") at `at` on the other, where both are known. Drawn
    as given, not as errors around a point: a speed's interval is that of its geometric mean (store/figures), and
    the arithmetic mean a bar or point shows can lie outside it (matplotlib refuses negative errors)."""
    if low is None or high is None:
        return
    mid, half = (low + high) / 2, (high - low) / 2
    x, y = (mid, at) if axis == "x" else (at, mid)
    ax.errorbar(x, y, **{f"{axis}err": half}, fmt="none", ecolor=style.pop("ecolor", "black"), **style)


def decode_per_arm(arms: list[ArmBar], path: Path, title: str) -> Path | None:
    """Mean decode tok/s per arm with its 95% interval, every ok run as a dot, the baseline as a line."""
    if not arms:
        return None
    fig, ax = plt.subplots(figsize=(9, 0.38 * len(arms) + 1.6))
    top = max([a.ci_high or a.mean or 0 for a in arms] + [v for a in arms for v in a.values] + [1.0])
    ys = {a.number: len(arms) - i for i, a in enumerate(arms)}  # first arm on top
    for a in arms:
        y = ys[a.number]
        if a.mean is None:
            ax.plot(0, y, "x", color=MISSING, markersize=8, markeredgewidth=2, clip_on=False, zorder=4)
            ax.text(top * 0.035, y, a.note or "no decode speed", va="center", fontsize=8, color=MISSING)
            continue
        ax.barh(y, a.mean, height=0.6, color=_bar_color(a), alpha=0.75)
        interval(ax, "x", y, a.ci_low, a.ci_high, capsize=3, elinewidth=1.2)
        spread = [y + 0.18 * ((k % 3) - 1) for k in range(len(a.values))]  # a little apart, so repeats stay visible
        ax.scatter(a.values, spread, color="black", s=9, zorder=3)
        if a.note:
            ax.text(
                max(a.ci_high or a.mean, *a.values) + top * 0.015, y, a.note, va="center", fontsize=8, color=MISSING
            )
    base = next((a for a in arms if a.is_baseline and a.mean is not None), None)
    if base:
        ax.axvline(base.mean, color="red", linestyle="--", linewidth=1)
    ax.set_yticks(list(ys.values()), [f"{a.number}  {a.arm}" for a in arms], fontsize=8)
    ax.set_ylim(0.4, len(arms) + 0.6)
    ax.set_xlim(0, top * (1.7 if any(a.note and a.mean is not None for a in arms) else 1.15))  # room for notes
    ax.set_xlabel("decode tok/s (bar: mean; whisker: 95% interval; dots: runs)")
    ax.grid(axis="x", alpha=0.3)
    legend = [plt.Line2D([], [], color="red", linestyle="--", label=f"baseline {base.mean:.1f} tok/s")] if base else []
    if any(a.is_control and a.mean is not None for a in arms):
        legend.append(
            Patch(
                color=_bar_color(ArmBar(0, "", is_control=True)),
                alpha=0.75,
                label="control: the same program drafting nothing",
            )
        )
    if any(a.mean is None for a in arms):
        legend.append(plt.Line2D([], [], color=MISSING, marker="x", linestyle="", label="no ok run (why beside it)"))
    ax.legend(handles=legend, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=3, fontsize=8, frameon=False)
    ax.set_title(title, fontsize=10, pad=22)  # above the legend
    return save(fig, path)


def _bar_color(arm: ArmBar) -> str:
    return "C1" if arm.is_baseline else "C2" if arm.is_control else "C0"


@dataclass
class RatioBar:
    arm: str  # with the parameters that tell two rows of one name apart
    ratio: float | None
    low: float | None
    high: float | None
    verdict: str


def build_pair(bars: list[RatioBar], path: Path, title: str) -> Path | None:
    """Head / base decode tok/s per test with its 95% interval; tests without a ratio marked with their verdict."""
    if not bars:
        return None
    fig, ax = plt.subplots(figsize=(9, 0.38 * len(bars) + 1.6))
    right = max([b.high or b.ratio or 1.0 for b in bars] + [1.2])
    for i, b in enumerate(bars):
        y = len(bars) - i
        if b.ratio is None:
            ax.plot(1, y, "x", color=MISSING, markersize=8, markeredgewidth=2, zorder=4)
            ax.text(1 + right * 0.02, y, b.verdict, va="center", fontsize=8, color=MISSING)
            continue
        color = {"improvement": "C2", "regression": "C3"}.get(b.verdict, "C0")
        err = [[b.ratio - b.low], [b.high - b.ratio]] if b.low is not None and b.high is not None else None
        ax.errorbar(b.ratio, y, xerr=err, fmt="o", color=color, capsize=3)
        ax.text((b.high or b.ratio) + right * 0.02, y, f"{b.ratio:.2f}x, {b.verdict}", va="center", fontsize=8)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks(range(len(bars), 0, -1), [b.arm for b in bars], fontsize=8)
    ax.set_ylim(0.4, len(bars) + 0.6)
    ax.set_xlim(0, right * 1.45)
    ax.set_xlabel("head / base decode tok/s (dot: ratio of means; whisker: 95% interval)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title, fontsize=10)
    return save(fig, path)


def telemetry(rows: list[dict], path: Path, title: str, window: tuple[float, float] | None = None) -> Path | None:
    """One run's samples over time: GPU utilisation, memory and power, or host RSS and CPU without a GPU. window:
    the generation window energy per token is measured over, shaded."""
    gpu = [r for r in rows if r.get("gpu") is not None]
    host = [r for r in rows if r.get("gpu") is None]
    if gpu:
        panels = [("util_pct", "GPU util %", 1), ("mem_used_bytes", "GPU memory GiB", 2**30), ("power_w", "power W", 1)]
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
                ax.plot(
                    *zip(*pts),
                    color=f"C{i}",
                    marker=".",
                    markersize=3,
                    label=f"GPU {index}" if index is not None and len(gpu) else None,
                )
        if window:
            ax.axvspan(*window, color="C2", alpha=0.15, label="generation window" if ax is axes[0] else None)
        ax.set_ylabel(label)
        ax.set_ylim(0, top * 1.1 or 1)  # from zero: a 2% wobble must not look like a collapse
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("seconds since the run started")
    if window or (gpu and len({r["gpu"] for r in gpu}) > 1):
        axes[0].legend(fontsize="small", loc="lower right", bbox_to_anchor=(1, 1.0), ncol=3, frameon=False)
    fig.suptitle(title)
    return save(fig, path)


def save(fig, path: Path) -> Path:
    fig.savefig(path, dpi=DPI, bbox_inches="tight")  # tight: legends and notes outside the axes are kept
    plt.close(fig)  # pyplot keeps every open figure alive otherwise
    return path
