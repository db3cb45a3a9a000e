"""Acceptance by draft position, one figure per sweep: for each speculative arm the share of verification steps
that accepted draft position 1, 2, ... (mean over its ok runs, each run a faint line), the drop from one position
to the next showing where the method's drafts go wrong. A key beside the axes names every arm of the sweep with
its mean acceptance length and sequence acceptance, those without a line with the reason.

A run's rates stop at the last position it ever accepted (the CLI statistics line), or run over the whole draft
window, zeros included (the server's counters): a position past a run's list was accepted in none of its steps,
so it counts as 0 in the mean.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.report.plots import MISSING, plt, save

KEY_PT = 7
LABEL_PT = 8
KEY_LINE_PT = KEY_PT * 1.45


@dataclass
class ArmRates:
    number: int
    arm: str
    runs: list[list[float]] = field(default_factory=list)  # accept_rate_per_pos of each ok run that has one
    mean_accept_len: float | None = None
    seq_acceptance: float | None = None
    seq_low: float | None = None  # bounds where the counters only bound it
    seq_high: float | None = None
    note: str | None = None  # why there is no line

    @property
    def mean(self) -> list[float]:
        width = max((len(r) for r in self.runs), default=0)
        return [sum(r[i] if i < len(r) else 0.0 for r in self.runs) / len(self.runs) for i in range(width)]


def acceptance_by_position(arms: list[ArmRates], path: Path, title: str) -> Path | None:
    """Write the figure to path; None (nothing written) when no arm has per-position rates."""
    shown = [a for a in arms if a.runs and a.mean]
    if not shown:
        return None
    colors = {a.number: f"C{i % 10}" for i, a in enumerate(shown)}
    height = max(4.2, (len(arms) + 4) * KEY_LINE_PT / 72 / 0.76 + 0.3)
    fig = plt.figure(figsize=(12.5, height))
    ax = fig.add_axes((0.07, 0.12, 0.42, 0.76))
    key = fig.add_axes((0.52, 0.12, 0.47, 0.76))
    key.axis("off")
    width = max(len(a.mean) for a in shown)
    # The axis to the data (a server arm's rates of a few percent must not lie flat under a 0-100% axis)
    top = min(105.0, max(5.0, 1.15 * 100 * max(v for a in shown for run in [a.mean, *a.runs] for v in run)))
    for a in shown:
        color = colors[a.number]
        for run in a.runs:
            padded = run + [0.0] * (len(a.mean) - len(run))
            ax.plot(range(1, len(padded) + 1), [100 * v for v in padded], color=color, alpha=0.2, linewidth=0.8)
        mean = a.mean
        ax.plot(range(1, len(mean) + 1), [100 * v for v in mean], "o-", color=color, markersize=4, linewidth=1.5)
    # Each arm's number left of its first point, moved apart vertically where first points are close.
    gap = 1.3 * LABEL_PT / (0.76 * height * 72) * top  # one label's height in axis units
    heights = _spread([100 * a.mean[0] for a in shown], gap, 0, top)
    for a, y in zip(shown, heights):
        ax.annotate(
            str(a.number),
            (1, 100 * a.mean[0]),
            xytext=(0.55, y),
            textcoords="data",
            fontsize=LABEL_PT,
            fontweight="bold",
            color=colors[a.number],
            ha="right",
            va="center",
            annotation_clip=False,
            arrowprops={"arrowstyle": "-", "color": colors[a.number], "linewidth": 0.5, "alpha": 0.6},
        )
    ax.set_xlim(-0.1, width + 0.5)
    ax.set_ylim(0, top)
    ax.set_xticks(range(1, width + 1) if width <= 20 else range(1, width + 1, max(1, width // 10)))
    ax.set_xlabel("draft position")
    ax.set_ylabel("steps that accepted this position %")
    ax.grid(alpha=0.3)
    step = KEY_LINE_PT / (0.76 * height * 72)
    for i, (number, line) in enumerate(_key(arms)):
        key.text(
            0,
            1 - i * step,
            line,
            va="top",
            ha="left",
            family="DejaVu Sans Mono",
            fontsize=KEY_PT,
            color=colors.get(number, "black" if number is None else MISSING),
            transform=key.transAxes,
        )
    fig.suptitle(title, fontsize=10)
    return save(fig, path)


def _key(arms: list[ArmRates]) -> list[tuple[int | None, str]]:
    width = max(len(a.arm) for a in arms)
    lines = [(None, f"{'#':>2}   {'arm':<{width}}  {'mean len':>8}  {'seq accept':>14}  runs"), (None, "")]
    for a in arms:
        if not (a.runs and a.mean):
            lines.append((a.number, f"{a.number:>2} x {a.arm:<{width}}  {a.note or 'no per-position rates'}"[:150]))
            continue
        mean_len = f"{a.mean_accept_len:.2f}" if a.mean_accept_len is not None else "-"
        seq = (
            f"{100 * a.seq_acceptance:.1f}%"
            if a.seq_acceptance is not None
            else f"[{100 * a.seq_low:.0f}, {100 * a.seq_high:.0f}]%"
            if a.seq_low is not None
            else "-"
        )
        lines.append((a.number, f"{a.number:>2}   {a.arm:<{width}}  {mean_len:>8}  {seq:>14}  {len(a.runs)}"))
    return lines


def _spread(values: list[float], gap: float, low: float, high: float) -> list[float]:
    """Positions near values, in the same order, at least gap apart and within [low, high] where they fit."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    placed = [values[i] for i in order]
    for k in range(1, len(placed)):  # push up
        placed[k] = max(placed[k], placed[k - 1] + gap)
    if placed and placed[-1] > high:  # then back down from the top
        placed[-1] = high
        for k in range(len(placed) - 2, -1, -1):
            placed[k] = min(placed[k], placed[k + 1] - gap)
    out = [0.0] * len(values)
    for k, i in enumerate(order):
        out[i] = max(placed[k], low) if len(placed) * gap <= high - low else placed[k]
    return out
