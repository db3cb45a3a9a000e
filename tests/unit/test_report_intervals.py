"""A speed's interval is that of its geometric mean (store/figures), so the arithmetic mean a bar shows can lie
outside it (three tiny runs at 5, 6 and 40 tok/s): the plot draws the interval as it is, never as negative errors
around the mean (matplotlib refused them, and `orch report` stopped with a traceback)."""

from orchestrator.report import plots


def test_a_mean_above_its_interval_is_drawn_with_the_interval_as_it_is(tmp_path):
    arms = [
        plots.ArmBar(1, "baseline", is_baseline=True, values=[5.0, 6.0, 40.0], mean=17.0, ci_low=2.9, ci_high=15.5),
        plots.ArmBar(2, "draft", values=[9.0, 10.0], mean=9.5, ci_low=7.0, ci_high=12.0),
    ]
    out = plots.decode_per_arm(arms, tmp_path / "decode.png", "decode")
    assert out == tmp_path / "decode.png" and out.stat().st_size > 0
