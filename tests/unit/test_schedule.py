"""Run order: interleaved, sequential and latin; warm-ups; what a resumed sweep still has to run."""

import pytest

from orchestrator.errors import InvalidOption
from orchestrator.recipe import schedule
from orchestrator.recipe.schedule import Slot


def short(slots):
    return [f"{'w' if s.warmup else ''}{s.arm}{s.repeat_index}" for s in slots]


def test_interleaved_is_the_default_and_round_robins_within_each_repeat():
    assert short(schedule.order_runs(["a", "b", "c"], 2)) == ["a0", "b0", "c0", "a1", "b1", "c1"]


def test_sequential_runs_every_repeat_of_one_arm_first():
    assert short(schedule.order_runs(["a", "b"], 3, "sequential")) == ["a0", "a1", "a2", "b0", "b1", "b2"]


def test_latin_rotates_the_starting_arm_per_repeat():
    slots = schedule.order_runs(["a", "b", "c"], 4, "latin")
    assert short(slots) == ["a0", "b0", "c0", "b1", "c1", "a1", "c2", "a2", "b2", "a3", "b3", "c3"]
    # over k repeats each arm takes each position once: a Latin square
    rounds = [[s.arm for s in slots if s.repeat_index == r] for r in range(3)]
    assert all(sorted(col) == ["a", "b", "c"] for col in zip(*rounds))


def test_warmups_precede_measurements_in_the_same_order_style():
    assert short(schedule.order_runs(["a", "b"], 2, warmup=1)) == ["wa0", "wb0", "a0", "b0", "a1", "b1"]
    assert short(schedule.order_runs(["a", "b"], 1, "latin", warmup=2)) == ["wa0", "wb0", "wb1", "wa1", "a0", "b0"]
    # sequential: each arm's warm-ups right before its own measurements
    assert short(schedule.order_runs(["a", "b"], 2, "sequential", warmup=1)) == ["wa0", "a0", "a1", "wb0", "b0", "b1"]


def test_every_arm_gets_every_repeat_exactly_once_in_every_order():
    for order in schedule.ORDERS:
        slots = schedule.order_runs(["x", "y", "z", "w"], 5, order, warmup=2)
        measured = [(s.arm, s.repeat_index) for s in slots if not s.warmup]
        assert sorted(measured) == sorted((a, r) for a in "xyzw" for r in range(5))
        assert sum(s.warmup for s in slots) == 8


def test_edges_and_bad_input():
    assert schedule.order_runs([], 3) == []
    assert schedule.order_runs(["a"], 0) == []
    with pytest.raises(InvalidOption, match="interleaved, sequential, latin"):
        schedule.order_runs(["a"], 1, "random")
    with pytest.raises(InvalidOption, match="negative"):
        schedule.order_runs(["a"], -1)
    with pytest.raises(InvalidOption, match="arm names repeat: a"):
        schedule.order_runs(["a", "b", "a"], 1)


def test_remaining_skips_done_measurements_and_keeps_warmups_only_for_arms_with_work():
    slots = schedule.order_runs(["a", "b"], 2, warmup=1)
    left = schedule.remaining(slots, {("a", 0), ("b", 0), ("a", 1)})
    assert short(left) == ["wb0", "b1"]  # a is complete: its warm-up is not needed any more
    assert schedule.remaining(slots, set()) == slots
    assert schedule.remaining(slots, {(a, r) for a in "ab" for r in range(2)}) == []
    assert schedule.remaining(slots, {("zz", 0)}) == slots  # unknown cells are ignored


def test_remaining_keeps_the_original_order():
    slots = schedule.order_runs(["a", "b", "c"], 3, "latin")
    left = schedule.remaining(slots, [("b", 1), ("a", 0)])
    assert left == [s for s in slots if (s.arm, s.repeat_index) not in {("b", 1), ("a", 0)}]
    assert all(isinstance(s, Slot) for s in left)


def test_a_resume_keeps_only_whole_rounds():
    from orchestrator.run.resume import keep_rounds_whole

    slots = schedule.order_runs(["baseline", "draft", "ngram"], 3, "interleaved", warmup=1)
    done = {
        ("baseline", 0): "ok",
        ("draft", 0): "ok",
        ("ngram", 0): "skipped",
        ("baseline", 1): "ok",
        ("ngram", 1): "skipped",
    }
    kept = keep_rounds_whole(slots, done)
    assert kept == {
        ("baseline", 0),
        ("draft", 0),
        ("ngram", 0),
        ("ngram", 1),
    }  # round 1 lacks draft: baseline runs again
    left = schedule.remaining(slots, kept)
    assert [(s.arm, s.repeat_index) for s in left if not s.warmup] == [
        ("baseline", 1),
        ("draft", 1),
        ("baseline", 2),
        ("draft", 2),
        ("ngram", 2),
    ]
