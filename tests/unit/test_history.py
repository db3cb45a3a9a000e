"""orch history's steps and plot from points (the store side runs in tests/integration/test_bisect.py)."""

from orchestrator.analyze import stats
from orchestrator.report import history


def point(build, samples, date):
    d = stats.describe(samples)
    return {
        "build": build,
        "commit": build + "0" * 30,
        "date": date,
        "sweeps": 1,
        "samples": samples,
        "n": d.n,
        "mean": d.mean,
        "ci_low": d.ci_low,
        "ci_high": d.ci_high,
    }


def test_only_a_change_beyond_the_threshold_and_significant_is_a_step(tmp_path):
    points = [
        point("a", [100, 101, 99], "2026-01-01"),
        point("b", [103, 104, 102], "2026-01-02"),  # +3%: below
        point("c", [80, 81, 79], "2026-01-03"),  # -22%, intervals apart: a step
        point("d", [70, 95, 82], "2026-01-04"),
    ]  # noisy: not significant
    lines = history.mark_steps(points, 0.05)
    assert [p.get("step") for p in points] == [None, False, True, False]
    # Welch df 3.77 between b and c: t 2.845 at that df (a rounded-down table said t(3) 3.182, [0.754, 0.800])
    assert lines == ["step: b -> c: regression, 0.777x [0.757, 0.797] (threshold 5%, intervals)"]
    rows = history.rows(points)
    assert [r["step"] for r in rows] == [None, None, "regression", None]
    assert rows[2]["vs_previous"] == "0.777x" and rows[0]["ci95"] == "[97.5, 102.5]"
    png = history.draw(points, "recipes/x.j2", "draft", "decode_tps", tmp_path / "h.png")
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_a_single_run_per_build_is_drawn_but_never_a_step(tmp_path):
    points = [point("a", [100], ""), point("b", [50], "")]
    assert history.mark_steps(points, 0.05) == [] and points[1]["verdict"] == "no significant change"
    assert history.draw(points, "x.j2", "draft", "acceptance", tmp_path / "one.png").exists()


def test_the_axis_starts_at_zero_so_a_small_difference_looks_small():
    """Two builds' acceptance 1.4 points apart (the pair's at f49e917 and 0c1e570): an axis spanning only the values
    drawn made it a cliff across the whole picture."""
    points = [point("a", [0.580, 0.586, 0.583], "2026-01-01"), point("b", [0.566, 0.572, 0.569], "2026-01-02")]
    history.mark_steps(points, 0.05)
    fig = history.figure(points, "x.j2", "draft", "acceptance")
    low, high = fig.axes[0].get_ylim()
    assert low == 0 and high > 0.6  # the highest point below the frame, not on it
    history.plt.close(fig)
