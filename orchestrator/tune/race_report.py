"""`orch report --tune N`: a tune's page: its verdict, what was raced and by which rule, and per workload the
answer table, the race drawn (each candidate's speedup over plain decoding as its runs came in, round by round,
ending where it was dropped or disqualified) and every decision with its reason. report.md, report.html (the same
page, self-contained) and one PNG per workload, written into the folder given.
"""

from __future__ import annotations

import math
from pathlib import Path

from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from orchestrator import tables
from orchestrator.report import html
from orchestrator.report.plots import plt, save
from orchestrator.store import tune_queries
from orchestrator.tune import decisions, race
from orchestrator.tune.answer import Answer
from orchestrator.tune.rules import Rules, percent

ANSWER_COLUMNS = ["candidate", "state", "runs", "vs_plain", "vs_control", "acceptance"]
EVENT_COLUMNS = ["round", "candidate", "event", "reason"]
SPEEDUP_TICKS = [0.1, 0.2, 0.3, 0.5, 0.7, 0.85, 1.0, 1.2, 1.5, 2, 3, 5, 10]
ENDED = {"dropped": ("x", "C3"), "disqualified": ("D", "dimgray"), "infeasible": ("s", "dimgray")}


def write(con, tune_id: int, out_dir: Path) -> Path:
    row = tune_queries.tune_row(con, tune_id)
    if row is None:
        from orchestrator.errors import TuneResumeError

        raise TuneResumeError(
            f"no tune {tune_id} in this results file; list them with `orch query 'SELECT id, "
            f"state, recipe_path FROM tunes'`"
        )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rounds, events = tune_queries.rounds(con, tune_id), tune_queries.events(con, tune_id)
    runs = tune_queries.race_runs(con, [r["sweep_id"] for r in rounds])
    result = row.get("result") or {}
    title = f"orch report: tune {tune_id}"
    lines = [
        f"# {title}",
        "",
        f"**Verdict:** {tables.md_text(result.get('verdict') or row['state'])}",
        "",
        "## What was raced",
        "",
        *_what(row),
        "",
    ]
    answers = {a.workload: a for a in _answers(tune_id, result)}
    for workload in dict.fromkeys([r["workload"] for r in rounds] + list(answers)):
        lines += [f"## Workload {tables.md_text(workload)}", ""]
        answer = answers.get(workload)
        if answer:
            lines += [tables.md_text(answer.verdict), "", tables.render(answer.rows, "md", ANSWER_COLUMNS), ""]
            if answer.command:
                said = "Run it" if answer.state == race.WINNER else "The leader (no winner)"
                lines += [f"{said}: {tables.md_code(answer.command)}", ""]
            if answer.server:
                lines += [f"Served: {tables.md_code(answer.server)}", ""]
        mine = [r for r in rounds if r["workload"] == workload]
        png = draw(
            workload,
            mine,
            [e for e in events if e["workload"] == workload],
            [r for r in runs if r["sweep_id"] in {x["sweep_id"] for x in mine}],
            out_dir / f"race-tune{tune_id}-{_file_part(workload)}.png",
            f"tune {tune_id}, {workload}",
        )
        if png:
            lines += [
                "Each line is a candidate's speedup over plain decoding (mean of its runs so far, paired by "
                "block) after each round; x: dropped as slower than the yardstick (the best survivor measured "
                "twice, or plain decoding), diamond: disqualified.",
                "",
                f"![the race, {tables.md_text(workload)}]({png.name})",
                "",
            ]
        decided = [{**e, "reason": _reason(e)} for e in events if e["workload"] == workload]
        if decided:
            lines += ["Decisions:", "", tables.render(decided, "md", EVENT_COLUMNS), ""]
    text = "\n".join(lines).rstrip() + "\n"
    path = out_dir / "report.md"
    path.write_text(text)
    (out_dir / "report.html").write_text(html.render(text, out_dir, title))
    return path


def _answers(tune_id: int, result: dict) -> list[Answer]:
    try:
        return [Answer.from_dict(a) for a in result.get("answers", [])]
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        from orchestrator.errors import TuneResumeError

        raise TuneResumeError(
            f"tune {tune_id}: its stored answer does not read ({type(exc).__name__}: {exc})"
        ) from None


def _reason(event: dict) -> str | None:
    """A decision as decisions.words says it now; a row whose kind was never told (before m025), as stored."""
    try:
        return decisions.words(decisions.from_row(event), event=False)
    except ValueError:
        return event["reason"]


def _what(row: dict) -> list[str]:
    rules = row.get("rules") or {}
    budget = row.get("budget") or {}
    repeats = rules.get("grid_repeats", Rules.grid_repeats)  # a tune stored before it: the grid of 5 it was
    alpha, margin = rules.get("alpha", Rules.alpha), percent(rules.get("tie_margin", Rules.tie_margin))
    spent = ", ".join(f"{v} {k}" for k, v in budget.items() if v) or f"the grid's cost at {repeats} repeats"
    return [
        f"- recipe {tables.md_code(row['recipe_path'])} on build {tables.md_code(row['build_name'])}",
        f"- candidates: {tables.md_text(row.get('space_source') or 'the recipe arms and matrix')}",
        f"- budget per workload: {spent}; state {row['state']}",
        f"- rule: one-sided t on log speed ratios, pooled noise, Holm at {alpha} per round; "
        f"tied within {margin}; {rules.get('max_runs')} runs per candidate "
        f"at most; output changes {'allowed' if rules.get('allow_output_change') else 'disqualify'}",
    ]


def _file_part(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)[:60]


def draw(
    workload: str, rounds: list[dict], events: list[dict], runs: list[dict], path: Path, title: str
) -> Path | None:
    """Candidates x rounds: each candidate's running speedup, its end marked; plain decoding at 1x."""
    if not rounds or not runs:
        return None
    baseline = next((r["arm"] for r in runs if r["is_baseline"]), None)
    if baseline is None:
        return None
    names = {r["arm"] for r in runs if not r["is_control"] and r["planned"]}
    round_of = {r["sweep_id"]: r["round"] for r in rounds}
    planned = {k: v for r in rounds for k, v in (r.get("references") or {}).items()}
    scores = race.block_scores(runs, baseline, names, planned)
    ends = {e["candidate"]: e for e in events if e["event"] in ENDED}
    finalists = {e["candidate"] for e in events if e["event"] in ("winner", "tied")}
    fig, ax = plt.subplots(figsize=(9, 5.5))
    ax.set_yscale("log")
    last = max(round_of.values())
    labels = []  # (x, y, name, colour) of each finalist's last point, named beside it once all are drawn
    for name in sorted(names - {baseline}):
        points = []
        for n in range(1, last + 1):
            values = [s for b, s in scores.get(name, {}).items() if round_of.get(b[0], 0) <= n]
            if values and (not points or len(values) > points[-1][2]):
                points.append((n, math.exp(race.mean(values)), len(values)))
        if not points:
            continue
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        if name in finalists:
            (line,) = ax.plot(xs, ys, "-o", linewidth=2.2, markersize=4, zorder=3)
            labels.append((xs[-1], ys[-1], name, line.get_color()))
        else:
            ax.plot(xs, ys, "-", color="lightgray", linewidth=1, zorder=1)
            marker, color = ENDED.get(ends.get(name, {}).get("event"), ("o", "gray"))
            ax.plot(xs[-1], ys[-1], marker, color=color, markersize=5, zorder=2)
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1)
    _name_finalists(ax, labels, last)
    ax.annotate(
        "plain decoding" + (" (finalist)" if baseline in finalists else ""),
        (0.6, 1.0),
        textcoords="offset points",
        xytext=(0, 4),
        fontsize=8,
    )
    ax.yaxis.set_major_locator(FixedLocator(SPEEDUP_TICKS))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(0.5, last + 2.2)  # room for the finalists' names
    ax.set_xticks(range(1, last + 1))
    ax.set_xlabel("round (survivors run once more; the most promising when the budget runs short)")
    ax.set_ylabel("speedup over plain decoding (log scale)")
    ax.grid(alpha=0.3)
    ax.set_title(f"{title}: the race ({len(names) - 1} candidates, {last} rounds)", fontsize=10)
    return save(fig, path)


NAMED_FINALISTS = 12  # names beside the plot; more finalists are counted under them (the answer's table has all)


def _name_finalists(ax, labels: list[tuple], last: int) -> None:
    """The fastest finalists' names right of the last round, in their lines' colours, moved apart where names would
    overlap (a thin line joins a moved name to its point) and kept inside the axes; at 50 finalists the rest are
    counted, never stacked over the title."""
    if not labels:
        return
    named = sorted(labels, key=lambda item: -item[1])[:NAMED_FINALISTS]
    bottom, top = (math.log10(v) for v in ax.get_ylim())
    gap = (top - bottom) * 0.034  # one line of 8-point text on this figure's axes, in log10 units
    placed: list[float] = []
    for _x, y, _name, _colour in sorted(named, key=lambda item: item[1]):
        at = math.log10(y)
        placed.append(max(at, placed[-1] + gap) if placed else at)
    # all names move together: the highest under the top of the axes, then the lowest above its bottom
    shift = max(0.0, placed[-1] - (top - gap))
    shift -= max(0.0, (bottom + gap) - (placed[0] - shift))
    for (x, y, name, colour), spot in zip(sorted(named, key=lambda item: item[1]), placed):
        ax.annotate(
            name,
            (x, y),
            xytext=(last + 0.25, 10 ** (spot - shift)),
            fontsize=8,
            va="center",
            color=colour,
            arrowprops={"arrowstyle": "-", "color": colour, "linewidth": 0.5},
        )
    if len(labels) > len(named):
        ax.annotate(
            f"and {len(labels) - len(named)} more finalists (the answer's table)",
            (1, 0),
            xycoords="axes fraction",
            xytext=(-4, 4),
            textcoords="offset points",
            ha="right",
            va="bottom",
            fontsize=8,
            color="gray",
        )
