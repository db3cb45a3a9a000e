"""Tune's answer agrees with itself at scale: 24 tied candidates are summarised in the verdict and the table (every
one under --explain), the intervals shown say they are unadjusted where the decision is Holm's, and the race plot
at 50 finalists names the fastest inside its axes without overlap and counts the rest."""

import math
from unittest.mock import patch

from orchestrator.cli.tune_answer import printed
from orchestrator.tune import race
from orchestrator.tune.answer import Answer, verdict
from orchestrator.tune.race_report import NAMED_FINALISTS, draw


def _tied(n: int) -> Answer:
    rows = [{"candidate": "off (plain decoding)", "state": "tied", "runs": 3, "vs_plain": None}]
    rows += [
        {"candidate": f"draft:draft_max={i}", "state": "tied", "runs": 3, "vs_plain": "0.44x [0.26, 0.74]"}
        for i in range(n)
    ]
    return Answer(
        workload="w",
        state=race.EQUIVALENT,
        tied=[r["candidate"] for r in rows],
        rows=rows,
        runs=80,
        grid_runs=130,
        candidates=n + 1,
    )


def test_a_tie_of_many_is_summarised_and_every_one_is_listed_under_explain():
    a = _tied(22)
    said = verdict(a)
    assert "off (plain decoding), draft:draft_max=0, draft:draft_max=1 and 20 others" in said
    text = printed(a)
    assert text.count("draft:draft_max=") == 7 and "and 15 more finalists within the noise" in " ".join(text.split())
    assert "not adjusted for the race's many comparisons" in " ".join(text.split())
    assert printed(a, explain=True).count("draft:draft_max=") == 22


def test_the_race_plot_at_fifty_finalists_names_the_fastest_inside_its_axes_and_counts_the_rest(tmp_path):
    names = [f"ngram-mod:ngram_n={i},draft_max={i % 7}" for i in range(50)]
    runs = [
        {
            "sweep_id": 1,
            "repeat_index": 0,
            "arm": "baseline",
            "status": "ok",
            "decode_tps": 100.0,
            "is_baseline": True,
            "is_control": False,
            "planned": True,
            "reference_arm": None,
        }
    ]
    runs += [
        {
            "sweep_id": 1,
            "repeat_index": 0,
            "arm": n,
            "status": "ok",
            "decode_tps": 100.0 + i * 0.1,
            "is_baseline": False,
            "is_control": False,
            "planned": True,
            "reference_arm": "baseline",
        }
        for i, n in enumerate(names)
    ]
    events = [{"candidate": n, "event": "tied"} for n in names]
    figures = []
    with patch("orchestrator.tune.race_report.save", side_effect=lambda fig, path: figures.append(fig) or path):
        draw("w", [{"sweep_id": 1, "round": 1, "references": {}}], events, runs, tmp_path / "race.png", "w")
    (fig,) = figures
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    named = [t for t in ax.texts if t.get_text() in names]
    assert len(named) == NAMED_FINALISTS and any(
        t.get_text() == "and 38 more finalists (the answer's table)" for t in ax.texts
    )
    # where each name sits (log scale): inside the axes, and a line of text apart (8 pt on axes 4 inches tall)
    spots = sorted(math.log10(t.xyann[1]) for t in named)
    low, high = (math.log10(v) for v in ax.get_ylim())
    line = (high - low) * 8 / 72 / (ax.get_window_extent(renderer).height / fig.dpi)
    assert low < spots[0] and spots[-1] < high and min(b - a for a, b in zip(spots, spots[1:])) >= line
