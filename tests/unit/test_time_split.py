"""Where a drafting arm's time went (analyze/time_split), from figures of the Qwen2.5-Coder pair's demo on 2 CPU
cores (sweep 1, draft-seed: 3 runs pooled): the split, the draft calls thrown away, the break-even, the sentence."""

import pytest

from orchestrator.analyze import costs, time_split, why_table

# arm_draft_costs' row and the two summary rows it reads: the arm's reference and that reference's speed
COSTS = {
    "sweep_id": 1,
    "arm": "draft-seed",
    "runs": 3,
    "decode_ms": 13_120.0,
    "passes": 86,
    "drafted": 108,
    "accepted": 108,
    "draft_ms": 5_325.0,
    "draft_calls": 87,
    "drafts_made": 12,
}
SUMMARY = [{"sweep": 1, "arm": "draft-seed", "vs": "control"}, {"sweep": 1, "arm": "control", "decode_tps": 28.7}]


def splits(cost_rows, summary=SUMMARY):
    return time_split.time_splits(cost_rows, summary, costs.step_costs(cost_rows, summary))


def test_the_split_adds_up_to_the_arms_time_and_names_what_was_thrown_away():
    (split,) = splits([COSTS]).values()
    assert split.tokens == 86 + 108 and split.thrown_away == 87 - 12
    assert split.drafting_per_token + split.rest_per_token == pytest.approx(13_120 / 194)
    assert split.pass_steps == pytest.approx((13_120 - 5_325) / 86 / (1000 / 28.7))
    k = 13_120 / 86 / (1000 / 28.7)
    assert split.break_even == pytest.approx((k - 1) / (108 / 86))
    text = split.sentence(0.51, with_draft_model=True)
    assert text.startswith(
        "draft-seed at 0.51x: a token cost 27.4 ms drafting + 40.2 ms verifying and the rest, "
        "against 34.8 ms for control; 75 of 87 draft calls made no draft"
    )
    assert "a pass yielded 2.26 tokens (108 of 108 drafted accepted)" in text
    # a break-even above 100% is said as what it means, never as "break-even at 148%"
    assert "; no acceptance can pay here (the pre-flight assumed one target step a pass)" in text  # 2.6 steps here
    assert "break-even at" not in text
    assert "draft calls" not in split.sentence(0.51, with_draft_model=False)  # an n-gram lookup that finds nothing


def test_an_arm_without_a_reference_speed_or_a_pass_has_no_split():
    assert splits([COSTS], SUMMARY[:1]) == {}
    assert splits([{**COSTS, "passes": 0}]) == {}
    no_stats = splits([{**COSTS, "draft_ms": None, "draft_calls": None}])[(1, "draft-seed")]
    assert no_stats.pass_steps is None and no_stats.thrown_away is None
    assert "no draft time in its logs" in no_stats.sentence(0.5, with_draft_model=True)


def test_the_targets_sampling_time_is_split_out_of_the_rest_where_its_perf_block_gave_it():
    (split,) = splits([{**COSTS, "sampling_ms": 194.0}]).values()
    assert "+ 39.2 ms verifying and the rest + 1.0 ms sampling, against" in split.sentence(0.51, True)
    assert split.fields()["sampling_ms_per_token"] == 1.0
    assert split.fields()["draft_ms_per_drafted_token"] == pytest.approx(5_325 / 108)


def test_the_why_table_puts_prediction_beside_measurement_and_says_no_acceptance_can_pay():
    (split,) = splits([COSTS]).values()
    row = {
        "sweep": 1,
        "arm": "draft-seed",
        "is_baseline": False,
        "is_control": False,
        "params": {},
        "drafted": 108,
        "time_split": split.fields(),
        "predicted": 0.42,
        "predicted_low": 0.29,
        "predicted_high": 0.61,
        "speedup": 0.56,
        "speedup_low": 0.44,
        "speedup_high": 0.71,
    }
    plain = {"sweep": 1, "arm": "control", "is_baseline": False, "is_control": True, "params": {}, "drafted": 0}
    unpredicted = {
        **row,
        "arm": "ngram",
        "predicted": None,
        "prediction_missing": "an n-gram method",
        "time_split": {**split.fields(), "break_even_acceptance": 0.22},
    }
    cells = why_table.rows_of([plain, row, unpredicted])  # a control speculates nothing: no row
    assert cells == [
        ["draft-seed", "0.42x [0.29, 0.61]", "0.56x [0.44, 0.71]", "2.26", "27.4", "2.60", "no acceptance can pay"],
        ["ngram", "-", "0.56x [0.44, 0.71]", "2.26", "27.4", "2.60", "22%"],
    ]
    text = why_table.text([("sweep 1: x", cells)], width=80)
    assert text.splitlines()[0].split() == [
        "why",
        "predicted",
        "measured",
        "tok/pass",
        "draft",
        "ms/tok",
        "verify",
        "break-even",
    ]
    assert why_table.text([("sweep 1: x", [])]) is None  # no arm speculated: no table
    # a speedup measured on text that loops is marked so (the verdict calls it no win); an arm with nothing to
    # show (no prediction, no split, no speedup) and an arm that never speculated are left to the verdict
    looped = {**unpredicted, "looped": 3}
    idle = {**plain, "arm": "idle", "is_control": False, "idle": 3, "prediction_missing": "an n-gram method"}
    quant = {**plain, "arm": "q8", "is_control": False, "speedup": 0.9}
    assert [c[:3] for c in why_table.rows_of([looped, idle, quant])] == [["ngram", "-", "0.56x [0.44, 0.71] (loops)"]]
