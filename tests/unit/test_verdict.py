"""The sentence each sweep ends with: what wins, what does not, and what to distrust."""

from orchestrator.analyze.verdict import gist, sweep_verdicts, verdict


def arm(
    name,
    speedup=None,
    low=None,
    high=None,
    *,
    baseline=False,
    idle=0,
    failed=0,
    skipped=0,
    warnings=None,
    ok=3,
    sweep=1,
    tps=100.0,
    failures=None,
):
    return {
        "sweep": sweep,
        "recipe": "recipe_a.j2",
        "build": "b-cpu",
        "arm": name,
        "is_baseline": baseline,
        "speedup": 1.0 if baseline else speedup,
        "speedup_low": low,
        "speedup_high": high,
        "idle": idle,
        "failed": failed,
        "skipped": skipped,
        "warnings": warnings,
        "ok_runs": ok,
        "runs": 3,
        "decode_tps": tps,
        "failures": failures,
    }


def test_a_winner_needs_its_whole_interval_above_one():
    rows = [arm("baseline", baseline=True), arm("draft", 1.31, 1.12, 1.52), arm("ngram", 1.05, 0.9, 1.2)]
    assert verdict(rows) == "sweep 1 (recipe_a.j2, b-cpu): draft at 1.31x [1.12, 1.52] beats the baseline."
    rows[1] = arm("draft", 1.08, 0.97, 1.2)
    assert "best draft at 1.08x [0.97, 1.20], not distinguishable from the baseline" in verdict(rows)


def test_an_arm_shown_to_win_is_named_before_a_higher_estimate_whose_interval_spans_one():
    rows = [arm("baseline", baseline=True), arm("cache", 1.90, 0.95, 3.80), arm("mod", 1.83, 1.71, 1.97)]
    assert verdict(rows) == "sweep 1 (recipe_a.j2, b-cpu): mod at 1.83x [1.71, 1.97] beats the baseline."


def test_no_winner_names_the_best_and_everything_to_distrust():
    rows = [
        arm("baseline", baseline=True, warnings="high_cv"),
        arm("draft", 0.37, 0.14, 0.98),
        arm("ngram", None, idle=3, warnings="no_drafts"),
        arm("big", failed=2, failures="crash_signal"),
        arm("new", skipped=3, ok=0),
    ]
    text = verdict(rows)
    assert text.startswith("sweep 1 (recipe_a.j2, b-cpu): no arm beats the baseline; best draft at 0.37x [0.14, 0.98].")
    assert "Drafted nothing: ngram." in text and "Failed: big (2 of 3, crash_signal)." in text
    assert "Skipped: new." in text and "Warnings: baseline (high_cv)." in text and "ngram (" not in text


def test_an_arm_that_drafted_nothing_is_never_the_best():
    rows = [arm("baseline", baseline=True), arm("ngram", None, idle=3)]  # summary blanks an idle arm's speedup
    assert "no arm has a speedup against the baseline" in verdict(rows)


def test_sweeps_without_a_baseline_or_its_runs_say_so():
    assert "no baseline arm, so no speedup; fastest raw at 2214.7 tok/s" in verdict([arm("raw", tps=2214.7)])
    assert "the baseline has no ok run" in verdict([arm("baseline", baseline=True, ok=0), arm("d", 1.2)])
    rows = [arm("baseline", baseline=True), arm("d", 0.9, 0.8, 1.0), arm("raw", sweep=2)]
    assert [v.split(":")[0] for v in sweep_verdicts(rows)] == [
        "sweep 1 (recipe_a.j2, b-cpu)",
        "sweep 2 (recipe_a.j2, b-cpu)",
    ]


def test_arms_against_different_controls_are_each_named_with_theirs():
    rows = [
        arm("baseline", baseline=True),
        {**arm("eagle3", 0.41, 0.11, 1.5), "vs": "control:p"},
        {**arm("mtp", 0.52, 0.39, 0.69), "vs": "control:p@qwen35"},
    ]
    assert (
        "no arm beats its control (the same program drafting nothing); best mtp at 0.52x [0.39, 0.69] "
        "against control:p@qwen35."
    ) in verdict(rows)
    rows[1]["vs"] = "control:p@qwen35"  # one control for all: named as the reference
    assert "no arm beats control:p@qwen35 (its control: the same program drafting nothing); best mtp" in verdict(rows)


def test_without_a_baseline_the_fastest_arm_comes_with_its_interval_and_is_never_told_apart_by_noise():
    """A quant matrix (no baseline): the fastest by mean is named with its 95% interval, and where the next
    arm's interval reaches it, the sentence says they are not told apart."""
    q2 = {**arm("q4_0-asked-q2_k", tps=38.5), "ci_low": 31.0, "ci_high": 47.8}
    q8 = {**arm("q8_0-from-q4_k_m", tps=33.3), "ci_low": 28.0, "ci_high": 39.6}
    text = verdict([q8, q2])
    assert "fastest q4_0-asked-q2_k at 38.5 tok/s [31.0, 47.8], not distinguishable from q8_0-from-q4_k_m" in text
    q8.update(ci_low=20.0, ci_high=25.0, decode_tps=22.0)
    assert verdict([q8, q2]).endswith("fastest q4_0-asked-q2_k at 38.5 tok/s [31.0, 47.8].")


def test_the_gist_is_the_result_and_one_sentence_of_what_stops_an_arm_being_read_as_one():
    rows = [
        arm("baseline", baseline=True, warnings="high_cv"),
        {**arm("draft", 0.37, 0.14, 0.98), "why_slower": "draft at 0.37x: a token cost ..."},
        arm("ngram", None, idle=3, warnings="no_drafts"),
        arm("big", failed=2, failures="crash_signal"),
        arm("new", skipped=3, ok=0),
    ]
    assert gist(rows) == (
        "sweep 1 (recipe_a.j2, b-cpu): no arm beats the baseline; best draft at 0.37x "
        "[0.14, 0.98]. Note: ngram drafted nothing; big failed 2 of 3 runs; new skipped."
    )
    assert "Why slower: draft at 0.37x" in verdict(rows)  # the long form keeps each losing arm's sentence
    assert gist(rows[:2]) == (
        "sweep 1 (recipe_a.j2, b-cpu): no arm beats the baseline; best draft at 0.37x [0.14, 0.98]."
    )
