"""Statistics against values computed by hand (the arithmetic is in the comments) and small known cases."""

import itertools
import math

import pytest

from orchestrator.analyze import rank_test, stats, warnings
from orchestrator.analyze.warning_kinds import (
    BELOW_BREAK_EVEN,
    FULL_ACCEPTANCE_SLOWDOWN,
    HIGH_CV,
    OUTLIERS,
    OUTSIDE_PREDICTION,
    WARNING_KINDS,
)


def test_describe_three_samples():
    # [10, 12, 14]: mean 12, deviations -2 0 2, sum of squares 8, / (n-1) = 4, stdev 2, cv 2/12.
    # t(0.975, df=2) = 4.302653; half width 4.302653 * 2 / sqrt(3) = 4.302653 * 1.154701 = 4.968275.
    s = stats.describe([14, 10, 12])
    assert (s.n, s.mean, s.median, s.min, s.max, s.stdev) == (3, 12, 12, 10, 14, 2)
    assert s.cv == pytest.approx(1 / 6)
    assert s.ci_low == pytest.approx(12 - 4.968275, abs=1e-6)
    assert s.ci_high == pytest.approx(12 + 4.968275, abs=1e-6)


def test_describe_five_samples():
    # [100, 102, 98, 101, 99]: mean 100, median 100; squares 0 4 4 1 1 = 10, / 4 = 2.5, stdev 1.581139.
    # t(df=4) = 2.776445; half 2.776445 * 1.581139 / sqrt(5) = 2.776445 * 0.707107 = 1.963243.
    s = stats.describe([100, 102, 98, 101, 99])
    assert s.stdev == pytest.approx(1.581139, abs=1e-6)
    assert (s.ci_low, s.ci_high) == pytest.approx((98.036757, 101.963243), abs=1e-6)
    assert s.cv == pytest.approx(0.01581139, abs=1e-8)


def test_describe_small_and_dirty_inputs():
    assert stats.describe([]) == stats.Stats(n=0)
    one = stats.describe([7.5])
    assert (one.n, one.mean, one.median, one.stdev, one.cv, one.ci_low, one.ci_high) == (
        1,
        7.5,
        7.5,
        None,
        None,
        None,
        None,
    )
    # None and NaN are runs without a number, not zeros: [4, 6] remain, mean 5
    assert stats.describe([4, None, float("nan"), 6]).mean == 5
    assert stats.describe([0, 0]).cv is None  # no CV around a zero mean


def test_t_quantile_at_the_exact_degrees_of_freedom():
    # The textbook table's values to 3 decimals where it has them; between them and past 120 the exact quantile, not
    # the next smaller df's or 1.96 (scipy's own at fractional df: tests/unit/test_intervals_agree).
    assert round(stats.t975(1), 3) == 12.706 and round(stats.t975(30), 3) == 2.042
    assert stats.t975(35) == pytest.approx(2.030108, abs=1e-6)
    assert stats.t975(119.5) == pytest.approx(1.980015, abs=1e-6) and round(stats.t975(120), 3) == 1.980
    assert stats.t975(121) == pytest.approx(1.979764, abs=1e-6) and stats.t975(10_000) == pytest.approx(
        1.9602, abs=1e-4
    )
    assert stats.t975(2.7) == pytest.approx(3.392148, abs=1e-6)  # Welch's fractional df, not rounded down
    assert stats.t975(0.5) > stats.t975(1)
    for df in (0, -1, float("nan")):
        with pytest.raises(ValueError):
            stats.t975(df)


def test_intervals_from_moments():
    # n 3, mean 12, sd 2: the describe case above, from its moments; on logs, exp of the same ends.
    assert stats.mean_interval(3, 12.0, 2.0) == pytest.approx((12 - 4.968275, 12 + 4.968275), abs=1e-6)
    assert stats.log_interval(3, 0.1, 0.05) == pytest.approx(
        tuple(math.exp(x) for x in stats.mean_interval(3, 0.1, 0.05))
    )
    for n, mean, sd in ((1, 0.1, None), (0, None, None), (None, None, None), (2, 0.1, None)):
        assert stats.mean_interval(n, mean, sd) == (None, None) == stats.log_interval(n, mean, sd)


def test_ratio_of_means_delta_method():
    # base [98, 100, 102]: mean 100, stdev 2, cv 0.02; head [88, 90, 92]: mean 90, stdev 2, cv 0.022222.
    # var(log ratio) = 0.02^2/3 + 0.022222^2/3 = 0.000133333 + 0.000164609 = 0.000297942, se 0.0172610.
    # Welch df = 0.000297942^2 / (0.000133333^2/2 + 0.000164609^2/2) = 8.87690e-8 / 2.24366e-8 = 3.956404,
    # t(3.956404) = 2.788553; ratio 0.9, interval 0.9 * e^(-/+ 2.788553 * 0.0172610) = 0.9 * e^(-/+0.0481332)
    # = 0.857706, 0.944379.
    r = stats.ratio_of_means([98, 100, 102], [88, 90, 92])
    assert r.ratio == pytest.approx(0.9) and not r.paired
    assert (r.ci_low, r.ci_high) == pytest.approx((0.857706, 0.944379), abs=1e-6)
    assert stats.ratio_of_means([100], [90]).ci_low is None
    assert stats.ratio_of_means([], [90]) is None
    same = stats.ratio_of_means([5, 5], [10, 10])
    assert (same.ratio, same.ci_low, same.ci_high) == (2, 2, 2)


def test_midranks():
    # 1 -> 1; the three 2s share positions 2, 3, 4 -> 3; the two 3s share 5, 6 -> 5.5
    assert rank_test.midranks([2, 1, 3, 2, 3, 2]) == [3, 1, 5.5, 3, 5.5, 3]


def test_mann_whitney_exact_complete_separation():
    # a below b entirely: only 1 of C(6,3) = 20 splits gives rank sum 6, so P(W <= 6) = 1/20, two-sided 0.1
    assert rank_test.mann_whitney_u([1, 2, 3], [4, 5, 6]) == pytest.approx(0.1)
    # 4 vs 4: 1 / C(8,4) = 1/70, two-sided 2/70 = 0.028571 (the smallest p that n = 4 can reach)
    assert rank_test.mann_whitney_u([5, 6, 7, 8], [1, 2, 3, 4]) == pytest.approx(2 / 70)
    assert rank_test.mann_whitney_u([1, 2, 3], [1, 2, 3]) == 1.0


def test_mann_whitney_exact_with_ties_by_hand():
    # a = [1, 2, 2, 3], b = [2, 3, 4, 4]. Pooled midranks: 1 -> 1, 2s -> 3, 3s -> 5.5, 4s -> 7.5.
    # a's rank sum 1 + 3 + 3 + 5.5 = 12.5. Picks of 4 ranks from {1, 3, 3, 3, 5.5, 5.5, 7.5, 7.5} (70 ways)
    # with sum <= 12.5: {1,3,3,3} = 10 (1 way), {1,3,3,5.5} = 12.5 (3 * 2 = 6 ways); any other pick is >= 14.5.
    # P(W <= 12.5) = 7/70 = 0.1, two-sided p = 0.2.
    assert rank_test.mann_whitney_u([1, 2, 2, 3], [2, 3, 4, 4], method="exact") == pytest.approx(0.2)


def test_mann_whitney_normal_approximation_by_hand():
    # a = 1..5, b = 6..10: U = 15 - 15 = 0, mean 12.5, var 25/12 * 11 = 22.916667, sd 4.787136.
    # z = (12.5 - 0.5) / 4.787136 = 2.506718; p = erfc(2.506718 / sqrt 2) = 0.012186 (scipy: 0.0121858).
    assert rank_test.mann_whitney_u(range(1, 6), range(6, 11), method="normal") == pytest.approx(0.0121858, abs=1e-6)
    # With ties, a = [1,2,2,3], b = [2,3,4,4]: U = 12.5 - 10 = 2.5, mean 8; tie term (24 + 6 + 6) / (8 * 7)
    # = 0.642857; var 16/12 * (9 - 0.642857) = 11.142857, sd 3.338092; z = (5.5 - 0.5) / 3.338092 = 1.497861;
    # p = 0.134169 (scipy asymptotic: 0.1341692).
    assert rank_test.mann_whitney_u([1, 2, 2, 3], [2, 3, 4, 4], method="normal") == pytest.approx(0.134169, abs=1e-6)
    assert rank_test.mann_whitney_u([5, 5, 5], [5, 5], method="normal") == 1.0  # all tied: no evidence


def test_mann_whitney_exact_matches_brute_force_enumeration():
    # The rank-sum DP against listing every split of the pooled ranks, ties included.
    a, b = [3.1, 4.0, 4.0, 7.2, 9.9], [1.0, 4.0, 5.5, 5.5, 8.0, 12.0]
    ranks = rank_test.midranks(a + b)
    observed = sum(ranks[:5])
    sums = [sum(c) for c in itertools.combinations(ranks, 5)]
    low = sum(s <= observed + 1e-9 for s in sums) / len(sums)
    high = sum(s >= observed - 1e-9 for s in sums) / len(sums)
    assert rank_test.mann_whitney_u(a, b) == pytest.approx(min(1, 2 * min(low, high)))


def test_mann_whitney_auto_switches_to_normal_for_large_samples():
    a, b = list(range(11)), list(range(5, 16))  # 11 * 11 = 121 > 100
    assert rank_test.mann_whitney_u(a, b) == rank_test.mann_whitney_u(a, b, method="normal")
    with pytest.raises(ValueError):
        rank_test.mann_whitney_u([], [1])
    with pytest.raises(ValueError):
        rank_test.mann_whitney_u([1], [2], method="bogus")


# --- warnings ---


def codes(ws):
    return [w.code for w in ws]


def warned(runs, **facts) -> list:
    return warnings.warnings_for(warnings.ArmFacts(runs=runs, **facts))


def test_each_kind_has_one_rule_in_the_tables_order():
    judged_apart = [OUTSIDE_PREDICTION]  # needs the predictions stored before the sweep
    assert [kind for kind, _ in warnings.RULES] + judged_apart == list(WARNING_KINDS)


def test_warning_kinds_are_a_fixed_set_that_names_what_helps():
    assert [k.code for k in WARNING_KINDS] == [
        "high_cv",
        "bimodal",
        "outliers",
        "slow_first_run",
        "no_drafts",
        "other_target",
        "full_acceptance_slowdown",
        "below_break_even",
        "output_differs",
        "degenerate_loop",
        "unequal_tokens",
        "bound_exceeded",
        "busy_machine",
        "outside_prediction",
    ]
    assert (
        "--repeat" in HIGH_CV.template
        and "--warmup" in OUTLIERS.template
        and "draft_max" in BELOW_BREAK_EVEN.template
        and "orch show" in FULL_ACCEPTANCE_SLOWDOWN.template
    )


def test_a_roofline_share_above_the_bound_is_a_measurement_problem_with_its_cause():
    assert warned([60.0], roofline_pct=99.0, bound_tps=67.0, bound_label="measured") == []
    [found] = warned([61.0], roofline_pct=102.0, bound_tps=67.0, bound_label="measured")
    assert found.code == "bound_exceeded" and "102% of the 67/s roofline bound (measured bandwidth)" in found.message
    assert "measured too low" in found.message and "measures it again" in found.message
    assert warned([61.0], roofline_pct=None) == []


def test_steady_arm_has_no_warnings():
    assert warned([100, 102, 98, 101, 99], acceptance=0.7, speedup=1.3, sweep_break_even=0.4) == []
    assert warned([]) == []


def test_high_cv():
    # [90, 100, 110]: stdev 10, cv 10% > 5%
    ws = warned([90, 100, 110])
    assert codes(ws) == ["high_cv"] and "10.0%" in ws[0].message
    # [100, 102, 98, 101, 99]: cv 1.6%, and two runs [100, 104]: stdev 2.83, cv 2.8%
    assert warned([100, 104]) == []


def test_bimodal_per_prompt_speeds():
    # The seed's case: a 59-67 tok/s tail beside ~135 tok/s. Split between 67 and 131: gap 64 >= 10% of the
    # median (99) and >= 4 x the larger cluster stdev (low [59, 61, 63, 67] stdev 3.42; high 2.65).
    per_prompt = [135, 59, 137, 61, 131, 63, 134, 67]
    low, high = stats.bimodal_split(per_prompt)
    assert (low, high) == ([59, 61, 63, 67], [131, 134, 135, 137])
    ws = warned([101, 100, 102], spread=per_prompt)
    assert codes(ws) == ["bimodal"] and "59-67 beside 131-137 tok/s" in ws[0].message


def test_bimodal_not_triggered_by_noise_a_lone_value_or_tiny_gaps():
    assert stats.bimodal_split([95, 97, 99, 100, 101, 103, 105, 108]) is None  # gaps of 2-3 tok/s
    assert stats.bimodal_split([100, 101, 100, 99, 50]) is None  # one low value is an outlier, not a cluster
    assert stats.bimodal_split([100.0, 100.0, 100.1, 100.1]) is None  # gap 0.1 is under 10% of the median
    # a wide high cluster: gap 43 between 67 and 110 is under 4 x its stdev (16.8)
    assert stats.bimodal_split([59, 63, 67, 110, 125, 140, 150]) is None
    assert stats.bimodal_split([1, 2, 100]) is None  # fewer than 4 values


def test_bimodal_per_run_speeds_default():
    # without `spread`, the per-run speeds are checked (CLI mode)
    assert "bimodal" in codes(warned([60, 62, 130, 133, 61, 131]))


def test_mad_outliers():
    # [100, 101, 99, 100, 102, 80]: median 100, |dev| 0 1 1 0 2 20 -> MAD 1;
    # z(80) = 0.6745 * 20 / 1 = 13.49 > 3.5; z(102) = 1.35
    assert stats.mad_outliers([100, 101, 99, 100, 102, 80]) == [80]
    ws = warned([100, 101, 99, 100, 102, 80])
    assert "outliers" in codes(ws) and "1 of 6 runs" in ws[codes(ws).index("outliers")].message
    # MAD 0 ([100, 100, 100, 100, 130]): mean |dev| 6, scale 1.2533 * 6 = 7.52, z(130) = 30 / 7.52 = 3.99 > 3.5
    assert stats.mad_outliers([100, 100, 100, 100, 130]) == [130]
    assert stats.mad_outliers([100, 100, 100]) == []
    assert stats.mad_outliers([1582.0, 1682.7, 1671.5]) == []  # three runs cannot single one out
    assert stats.mad_outliers([100, 200]) == []  # too few to tell which one is odd
    # [100, 102, 98, 101, 99]: median 100, MAD 1, largest z = 0.6745 * 2 = 1.35
    assert stats.mad_outliers([100, 102, 98, 101, 99]) == []


def test_full_acceptance_with_slowdown():
    ws = warned([50, 50.5], acceptance=1.0, speedup=0.8, drafted=120, accepted=120)
    assert codes(ws) == ["full_acceptance_slowdown"]
    assert "0.80x" in ws[0].message and "drafted 120, accepted 120" in ws[0].message
    assert warned([50, 50.5], acceptance=1.0, speedup=1.4) == []  # full acceptance that pays off
    assert warned([50, 50.5], acceptance=0.98, speedup=0.8) == []
    assert warned([50, 50.5], acceptance=1.0) == []  # no baseline, no speedup


def test_break_even_interpolates_between_the_nearest_loser_and_winner():
    # losers (0.30, 0.80), (0.50, 0.90); winners (0.70, 1.10), (0.90, 1.50).
    # highest loser 0.50 @ 0.90, lowest winner 0.70 @ 1.10: 0.50 + (1 - 0.90) * 0.20 / 0.20 = 0.60
    points = [(0.9, 1.5), (0.3, 0.8), (0.5, 0.9), (0.7, 1.1), (None, 1.2)]
    assert stats.break_even(points) == pytest.approx(0.6)
    assert stats.break_even([(0.5, 0.9), (0.6, 0.95)]) is None  # nothing wins: no crossing seen
    assert stats.break_even([(0.8, 0.9), (0.6, 1.2)]) is None  # overlap: acceptance does not decide
    assert stats.break_even([]) is None


def test_below_break_even():
    ws = warned([80, 81], acceptance=0.45, speedup=0.9, sweep_break_even=0.6)
    assert codes(ws) == ["below_break_even"] and "45.0%" in ws[0].message and "60.0%" in ws[0].message
    assert warned([80, 81], acceptance=0.65, speedup=1.1, sweep_break_even=0.6) == []
    assert warned([80, 81], acceptance=0.45, sweep_break_even=None) == []


def test_warnings_come_in_fixed_order():
    ws = warned([60, 62, 130, 133, 61, 131], acceptance=1.0, speedup=0.7, sweep_break_even=1.01)
    assert codes(ws) == ["high_cv", "bimodal", "full_acceptance_slowdown", "below_break_even"]


def test_sample_stdev_agrees_with_the_exact_statistics_stdev():
    import random
    import statistics

    rng = random.Random(7)
    for n in (2, 3, 10, 200):
        xs = [rng.uniform(300.0, 3000.0) for _ in range(n)]
        assert stats.sample_stdev(xs) == pytest.approx(statistics.stdev(xs), rel=1e-12)
    assert stats.sample_stdev([5.0, 5.0, 5.0]) == 0.0
    with pytest.raises(ValueError):
        stats.sample_stdev([1.0])


def test_an_arm_that_drafted_nothing_is_flagged_apart_from_spec_not_engaged():
    (w,) = warned([100.0, 101.0], idle=2, ok=2)
    assert w.code == "no_drafts" and "2 of 2" in w.message and "no speedup" in w.message
    (w,) = warned([100.0, 101.0], idle=1, ok=2)
    assert "mixes runs" in w.message
    assert warned([100.0, 101.0], idle=0, ok=2) == []
    (w,) = warned([100.0, 101.0], idle=2, ok=2, idle_draft=True)  # a draft model ran for nothing
    assert "draft model still ran at every step" in w.message and "no speedup" not in w.message


def test_high_cv_advice_fits_the_machine_that_ran():
    cpu = warned([90, 100, 110])[0].message
    gpu = warned([90, 100, 110], gpu=True)[0].message
    assert "nvidia-smi" not in cpu and "cpupower frequency-set" in cpu and "-t" in cpu
    assert "nvidia-smi -lgc" in gpu and "cpupower" not in gpu and "--repeat" in gpu


def test_output_differs_names_the_count_and_where():
    assert warned([100.0], outputs_differ=0, outputs_compared=3) == []
    [found] = warned([100.0], outputs_differ=1, outputs_compared=3, first_diff_char=17)
    assert (
        found.code == "output_differs"
        and found.message.startswith("1 of 3 outputs differ")
        and "character 17" in found.message
    )
    # Rows stored before the count of compared outputs (server runs, outputs_differ only): the count alone.
    [old] = warned([100.0], outputs_differ=2)
    assert old.message.startswith(
        "2 outputs differ at temperature 0 from the same program and target's without "
        "drafting (its control's, or the baseline's where it runs the same program): in "
        "exact arithmetic"
    )
    [located] = warned(
        [100.0], outputs_differ=1, outputs_compared=1, first_diff_char=90, first_diff_token=16, generated=64
    )
    assert (
        "(the first at token 16 of 64, character 90 of the generated text: the last 75% of the text differs)"
        in located.message
        and "its speedup still compares the same number of tokens" in located.message
    )


def test_a_figure_with_its_own_standard_error_gets_the_normal_interval():
    from scipy.stats import norm

    assert stats.Z975 == norm.ppf(0.975)
    low, high = stats.error_interval(2.0, 0.1)
    assert (low, high) == (2.0 - norm.ppf(0.975) * 0.1, 2.0 + norm.ppf(0.975) * 0.1)
    assert stats.error_interval(2.0, None) == (2.0, 2.0)


def test_a_first_run_far_slower_than_the_rest_hints_at_a_warm_up():
    """hyperfine's habit: a first run far slower than the others is a cold start; the hint names --warmup and the
    recipe's meta. Not below three runs, not for a merely slower first run, not for a slow later run."""
    [hint] = [w for w in warned([9.0, 40.0, 42.0, 41.0]) if w.code == "slow_first_run"]
    assert "9.0 tok/s, 4.6x slower than the median of the rest (41.0 tok/s)" in hint.message
    assert "--warmup 1" in hint.message and '"warmup": 1' in hint.message
    for runs in ([9.0, 40.0], [30.0, 40.0, 42.0], [40.0, 9.0, 42.0]):
        assert "slow_first_run" not in codes(warned(runs)), runs


def test_a_run_beside_other_work_is_warned_of_by_its_share_and_busiest():
    assert warned([50.0, 51.0], others_cpu_pct=8.0, busy_pct=10.0) == []
    [found] = warned([50.0, 51.0], others_cpu_pct=35.0, busiest_other="python3 (pid 9), 33% of the machine")
    assert found.code == "busy_machine" and found.message.startswith("other programs used 35% of the machine")
    assert "the busiest: python3 (pid 9), 33% of the machine" in found.message and "--wait-quiet" in found.message
    assert warned([50.0, 51.0], others_cpu_pct=35.0, busy_pct=100.0) == []  # ORCH_BUSY_PCT=100: never
