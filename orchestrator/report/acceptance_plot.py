"""The acceptance against speedup figure of one sweep: each speculative arm a numbered point with its speedup's 95%
interval, the line its measured step cost predicts (analyze/costs: speedup(a) = (1 + g a) / k), and where that
line crosses 1, the arm's break-even acceptance. A key beside the axes names every arm of the sweep, those
without a point with the reason (failed, drafted nothing, the reference itself, ...).

Numbers are placed by a small greedy search over offsets around each point, avoiding markers, interval bars and
the numbers already placed, so two close points keep readable labels.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

from orchestrator.analyze.costs import MODEL_TOLERANCE, StepCost
from orchestrator.report.plots import DPI, MISSING, plt, save

FONT_PT = 8  # the numbers beside the points
# The key sits under the plot, the figure 9 inches wide (990 px): an HTML report 1,000 px wide shows it near its own
# size, so the key's 8 points read as about 12 px (beside the plot, 12.5 inches wide, its 7 points read as 6 px).
KEY_PT = 8
KEY_LINE_PT = KEY_PT * 1.45
WIDTH_IN, PLOT_IN = 9.0, 3.6
# Offsets (points) tried in order around a point: right, above, left, below, then further out.
OFFSETS = [
    (6, 2),
    (6, -10),
    (-6, 2),
    (-6, -10),
    (0, 8),
    (0, -16),
    (12, 10),
    (12, -18),
    (-14, 10),
    (-14, -18),
    (20, -4),
    (-22, -4),
    (0, 20),
    (0, -28),
]


@dataclass
class Point:
    number: int
    arm: str
    acceptance: float | None  # 0..1
    speedup: float | None
    low: float | None = None
    high: float | None = None
    cost: StepCost | None = None
    note: str | None = None  # why there is no point

    @property
    def plotted(self) -> bool:
        return self.acceptance is not None and self.speedup is not None


def acceptance_speedup(points: list[Point], path: Path, title: str) -> Path | None:
    """Write the figure to path; None (nothing written) when no arm has both an acceptance and a speedup."""
    fig = draw(points, title)
    return save(fig, path) if fig else None


def draw(points: list[Point], title: str):
    shown = [p for p in points if p.plotted]
    if not shown:
        return None
    colors = {p.number: f"C{i % 10}" for i, p in enumerate(shown)}
    key_lines = _key(points)
    key_in = (len(key_lines) + 5) * KEY_LINE_PT / 72  # the lines, then the legend's four and a gap
    height = PLOT_IN + 1.35 + key_in  # the two-line title above the plot, its axis label under it
    fig = plt.figure(figsize=(WIDTH_IN, height))
    ax = fig.add_axes((0.09, (key_in + 0.75) / height, 0.88, PLOT_IN / height))
    key = fig.add_axes((0.02, 0.05 / height, 0.96, key_in / height))
    key.axis("off")
    top = max([p.high or p.speedup for p in shown] + [1.15])
    for p in shown:
        x, color = 100 * p.acceptance, colors[p.number]
        err = [[p.speedup - p.low], [p.high - p.speedup]] if p.low is not None and p.high is not None else None
        ax.errorbar(x, p.speedup, yerr=err, fmt="o", color=color, capsize=3, markersize=5, zorder=3)
        if p.cost:
            ax.plot([0, 100], [p.cost.speedup_at(0), p.cost.speedup_at(1)], ":", color=color, linewidth=1)
            if 0 <= p.cost.break_even <= 1:
                ax.plot(
                    100 * p.cost.break_even,
                    1,
                    "^",
                    color=color,
                    markersize=7,
                    markeredgecolor="black",
                    markeredgewidth=0.5,
                    zorder=4,
                )
    ax.axhline(1.0, color="black", linewidth=1)
    ax.set_xlim(0, 100)
    ax.set_ylim(0, top * 1.12)
    ax.set_xlabel("acceptance % (accepted / drafted)")
    ax.set_ylabel("speedup over its reference (95% interval)")
    ax.grid(alpha=0.3)
    _number_points(ax, fig, shown)
    step = KEY_LINE_PT / (key_in * 72)  # one key line in key-axes fractions
    for i, (number, line) in enumerate(key_lines):
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
    key.legend(
        handles=[
            plt.Line2D([], [], color="black", label="speedup 1: as fast as its reference"),
            plt.Line2D(
                [], [], color="gray", linestyle=":", label="speedup its measured step cost predicts at each acceptance"
            ),
            plt.Line2D(
                [],
                [],
                color="gray",
                marker="^",
                linestyle="",
                markeredgecolor="black",
                label="break-even acceptance (where that line meets 1)",
            ),
            plt.Line2D([], [], color=MISSING, marker="x", linestyle="", label="arm without a point"),
        ],
        loc="lower left",
        bbox_to_anchor=(0, 0),
        fontsize=KEY_PT,
        frameon=False,
    )
    fig.suptitle(title, fontsize=10)
    return fig


def _key(points: list[Point]) -> list[tuple[int | None, str]]:
    """(arm number or None for the header, text) per line: every arm of the sweep, in its order."""
    width = max(len(p.arm) for p in points)
    lines = [
        (None, f"{'#':>2}   {'arm':<{width}}  {'speedup [95%]':<20}  {'accept':>6}  {'modelled':>9}  break-even"),
        (None, ""),
    ]
    for p in points:
        if not p.plotted:
            lines.append((p.number, f"{p.number:>2} x {p.arm:<{width}}  {p.note or 'no acceptance'}"[:150]))
            continue
        interval = f" [{p.low:.2f}, {p.high:.2f}]" if p.low is not None and p.high is not None else " (1 pair)"
        lines.append(
            (
                p.number,
                f"{p.number:>2}   {p.arm:<{width}}  {f'{p.speedup:.2f}x{interval}':<20}  "
                f"{100 * p.acceptance:5.1f}%  {predicted_text(p):>9}  "
                f"{break_even_text(p.cost)}",
            )
        )
    lines += [(None, ""), *((None, part) for part in textwrap.wrap(PREDICTED_MEANS, KEY_CHARS))]
    return lines


KEY_CHARS = 100  # a key line's characters at most where orch writes it (arm names may make a line longer)


PREDICTED_MEANS = (
    f"modelled (after the run): Leviathan et al.'s speedup, verification costed by the other arms (else one step), "
    f"shown only within {MODEL_TOLERANCE:.0%} of the measurement or inside its interval"
)


def predicted_text(p: Point) -> str:
    """Leviathan et al.'s predicted speedup (analyze/costs: verification as the sweep's other arms paid it, else one
    target step), where the measurement bears it out
    (analyze/costs.StepCost.checked_model). The dotted line is drawn with the measured pass cost instead, so
    it meets the arm's measured speedup at its acceptance; where the two figures part, verification costs more (or
    less) than one target step (analyze/costs)."""
    predicted = p.cost.checked_model(p.speedup, p.low, p.high) if p.cost else None
    return "-" if predicted is None else f"{predicted:.2f}x"


def break_even_text(cost: StepCost | None) -> str:
    if cost is None:
        return "-"
    if cost.break_even > 1:
        return f"none (needs {100 * cost.break_even:.0f}%)"
    return f"{100 * max(cost.break_even, 0.0):.1f}%"


def _number_points(ax, fig, shown: list[Point]) -> None:
    """Write each point's number (and its break-even marker's) where it overlaps nothing placed before."""
    fig.canvas.draw()  # fixes the transforms: placement works in display pixels
    px = DPI / 72
    to_px = ax.transData.transform
    obstacles = []
    for p in shown:
        x, y = to_px((100 * p.acceptance, p.speedup))
        obstacles.append((x - 5, y - 5, x + 5, y + 5))
        if p.low is not None and p.high is not None:
            (_, y0), (_, y1) = to_px((0, p.low)), to_px((0, p.high))
            obstacles.append((x - 3, min(y0, y1), x + 3, max(y0, y1)))
    labels = [(p.number, (100 * p.acceptance, p.speedup)) for p in shown]
    labels += [(p.number, (100 * p.cost.break_even, 1.0)) for p in shown if p.cost and 0 <= p.cost.break_even <= 1]
    box = ax.get_window_extent()
    for number, xy in labels:
        x, y = to_px(xy)
        text = str(number)
        w, h = (0.62 * FONT_PT * len(text) + 2) * px, 1.15 * FONT_PT * px
        best, best_cost = OFFSETS[0], None
        for dx, dy in OFFSETS:
            rect = (
                x + dx * px - (w if dx < 0 else 0),
                y + dy * px,
                x + dx * px + (0 if dx < 0 else w),
                y + dy * px + h,
            )
            cost = sum(_overlap(rect, o) for o in obstacles) + _outside(rect, box)
            if best_cost is None or cost < best_cost:
                best, best_cost, best_rect = (dx, dy), cost, rect
            if cost == 0:
                break
        obstacles.append(best_rect)
        ax.annotate(
            text,
            xy,
            xytext=best,
            textcoords="offset points",
            fontsize=FONT_PT,
            fontweight="bold",
            ha="right" if best[0] < 0 else "left",
            va="bottom",
            color="black",
            annotation_clip=False,
        )


def _overlap(a, b) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def _outside(rect, box) -> float:
    """Area of rect outside the axes box (a number cut off by the frame is no label)."""
    inside = _overlap(rect, (box.x0, box.y0, box.x1, box.y1))
    return (rect[2] - rect[0]) * (rect[3] - rect[1]) - inside
