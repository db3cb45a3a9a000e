"""A pair's acceptance replayed for any setting from one wide probe (parse/draft_trace, analyze/acceptance_model)
and priced into a predicted speedup (analyze/prediction): recorded real -lv 5 logs, and texts made by hand where
the rule is the point (a window, p_min, n_min as llama-speculative-simple at 0c1e57098 applies them)."""

from pathlib import Path

import pytest

from orchestrator.analyze.acceptance_model import Setting, replay, revealed
from orchestrator.analyze.machine_costs import PassCosts, ProbeKey, Timing
from orchestrator.analyze.prediction import calibrate, calibrate_lookup, observed, predict, predict_lookup
from orchestrator.errors import ParseError
from orchestrator.parse.draft_trace import DraftPass, draft_passes, pass_counts

LOGS = Path(__file__).parent.parent / "fixtures" / "logs"
MTP_LV5 = LOGS / "0c1e57098" / "spec-simple-mtp-lv5.stderr"  # --spec-draft-n-max 3, -n 64 (README there)


def test_a_recorded_debug_log_reads_as_its_passes():
    passes = draft_passes(MTP_LV5.read_text(errors="replace"))
    assert len(passes) == 33
    assert sum(p.accepted for p in passes) == 32 and sum(len(p.drafted) for p in passes) == 98  # its statistics
    assert sum(p.accepted == len(p.drafted) for p in passes) == 5  # the README's "5 of 33 in full"
    assert passes[0].drafted[0] == (22317, 0.883) and passes[0].last_token == 28649


def test_a_log_without_pass_lines_or_with_checkpoint_replays_is_refused():
    with pytest.raises(ParseError, match="-lv 5"):
        draft_passes("decoded 64 tokens in 1.0 seconds\n")
    replayed = (
        "- seq_id 0, draft candidate   0, pos   0:   11 (   0.900) 'a'\n"
        "partial acceptance: 0 < 1, restoring checkpoint\n"
    )
    with pytest.raises(ParseError, match="checkpoint"):
        draft_passes(replayed)


def test_the_probes_own_setting_replays_to_its_own_passes():
    """The replay follows llama.cpp's loop: at the probe's window every pass comes out as the log has it, the last
    one too (its window capped by what is left of -n, then uncapped once nothing is: llama.cpp's n_max 0)."""
    passes = draft_passes(MTP_LV5.read_text(errors="replace"))
    known = revealed(passes, window=3, n_predict=64)
    again = replay(known, Setting(3), unknown_matches=False)
    assert [(p.kept, p.accepted) for p in again.passes] == [(len(p.drafted), p.accepted) for p in passes]
    assert again.unknown_used == 0 and known.unknown == 5  # the tokens after the 5 full drafts


def text(*matches: tuple[bool, float], after_miss: dict[int, tuple[float, ...]] | None = None):
    """A probe at a window as long as the text that revealed every position: `matches[q - 1]` at position q."""
    passes, start = [], 0
    while start < len(matches):
        run = 0
        while start + run < len(matches) and matches[start + run][0]:
            run += 1
        end = min(start + run + 1, len(matches))
        drafted = tuple((0, p) for _, p in matches[start:end]) + tuple(
            (0, p) for p in (after_miss or {}).get(start + run + 1, ())
        )
        passes.append(DraftPass(drafted, run, 0))
        start = start + run + 1
    return revealed(passes, window=16, n_predict=10**6)


def test_a_window_keeps_up_to_its_length_and_the_target_adds_its_own():
    known = text(*[(True, 0.9)] * 7, (False, 0.4), *[(True, 0.9)] * 4)
    r = replay(known, Setting(window=3), unknown_matches=False)
    # passes from the prompt: 3 kept +1, 3 kept +1 (reaches position 8: 7 is the target's), then ...
    assert [(p.kept, p.accepted) for p in r.passes][:2] == [(3, 3), (3, 3)]
    assert r.passes[0].draft_steps == 3  # the last token's decode, then each kept token's but the last
    assert r.acceptance == pytest.approx(r.accepted / r.drafted)


def test_p_min_cuts_a_draft_before_the_unsure_token_and_n_min_drops_a_short_one():
    """llama.cpp samples, cuts below p_min (that token not kept, its step already spent), keeps, stops at the
    window; a draft shorter than n_min is thrown away after the draft model ran."""
    known = text((True, 0.95), (True, 0.6), (True, 0.95), (True, 0.95), (False, 0.3), (True, 0.9))
    cut = replay(known, Setting(window=4, p_min=0.9), unknown_matches=False).passes[0]
    assert (cut.kept, cut.accepted, cut.draft_steps) == (1, 1, 2)
    dropped = replay(known, Setting(window=4, n_min=2, p_min=0.9), unknown_matches=False).passes[0]
    assert (dropped.kept, dropped.accepted, dropped.dropped, dropped.draft_steps) == (0, 0, 1, 2)
    kept = replay(known, Setting(window=4, n_min=1, p_min=0.9), unknown_matches=False).passes[0]
    assert kept.kept == 1  # exactly n_min is kept


def test_after_a_miss_the_draft_goes_on_as_the_probe_saw_it():
    """A miss at position 2: the draft keeps drafting its wrong continuation while its probabilities hold."""
    known = text((True, 0.95), (False, 0.95), (True, 0.95), after_miss={2: (0.95, 0.5)})
    first = replay(known, Setting(window=4, p_min=0.9), unknown_matches=False).passes[0]
    assert (first.kept, first.accepted) == (3, 1)  # match, miss, then one more above p_min, cut at 0.5


def test_positions_never_revealed_bound_the_replay_both_ways():
    passes = draft_passes(MTP_LV5.read_text(errors="replace"))
    known = revealed(passes, window=3, n_predict=64)
    high, low = (replay(known, Setting(2), unknown_matches=m) for m in (True, False))
    assert high.unknown_used > 0
    assert high.tokens_per_pass >= low.tokens_per_pass


def costs(step_ms: float, per_token: float, extra: float = 0.0) -> PassCosts:
    """A model whose pass of b tokens costs step_ms + per_token * (b - 1) (+ extra, for noise), probed 1..17."""
    return PassCosts(
        ProbeKey("b", "h", "m", 2, 0, 0),
        "m",
        {b: Timing(b, (step_ms + per_token * (b - 1) + extra,)) for b in range(1, 18)},
    )


def test_a_cpu_that_pays_a_step_a_token_cannot_gain_where_a_gpu_does():
    """Same acceptance (every drafted token matches), two machines: a CPU-like target (a pass of b costs b steps)
    and a GPU-like one (a pass costs one step up to 17): the draft pays only on the second."""
    known = text(*[(True, 0.99)] * 200)
    draft = costs(3.0, 0.3)
    cal = calibrate(known, costs(30.0, 0.0), draft, decode_ms=1000.0, draft_ms=200.0, plain_ms_per_token=31.0)
    gpu = predict(known, Setting(4), costs(30.0, 0.0), draft, cal)
    cpu = predict(known, Setting(4), costs(30.0, 30.0), draft, cal)
    assert gpu.speedup > 1 > cpu.speedup
    assert cpu.break_even > 1 and gpu.break_even < 1  # at 100% acceptance the CPU setting still loses
    assert gpu.tokens_per_pass == pytest.approx(5.0, rel=0.02) and gpu.acceptance == 1.0
    assert gpu.low <= gpu.speedup <= gpu.high


def test_the_calibration_says_how_much_of_the_probe_run_llama_bench_leaves_unexplained():
    """Priced at its own window, the probe's passes cost what llama-bench's timings explain of the decode time the
    probe run printed; the rest is the residual, which widens every interval (and is not fitted away)."""
    passes = draft_passes(MTP_LV5.read_text(errors="replace"))
    known = revealed(passes, window=3, n_predict=64)
    target, draft = costs(30.0, 12.0), costs(9.0, 2.0)
    cal = calibrate(known, target, draft, decode_ms=4000.0, draft_ms=900.0, plain_ms_per_token=35.0)
    own = predict(known, Setting(3), target, draft, cal)
    assert own.speedup * (1 - cal.residual) == pytest.approx((known.tokens / 4000.0) * 35.0)
    assert cal.plain_steps == pytest.approx(35 / 30) and cal.residual != 0
    exact = calibrate(
        known, target, draft, decode_ms=4000.0 * (1 - cal.residual), draft_ms=900.0, plain_ms_per_token=35.0
    )
    assert abs(exact.residual) < 1e-9
    tight = predict(known, Setting(2), target, draft, exact)
    loose = predict(known, Setting(2), target, draft, cal)
    assert loose.high / loose.low > tight.high / tight.low
    assert tight.speedup == pytest.approx(loose.speedup)  # the residual widens, it does not move


def test_a_measurement_outside_its_prediction_names_the_input_that_was_off():
    from orchestrator.analyze.warnings import outside_prediction

    predicted = {"predicted": 0.6, "low": 0.5, "high": 0.7, "mean_accept_len": 2.7}
    assert outside_prediction(0.65, predicted, 2.7) is None  # inside: nothing to say
    assert outside_prediction(0.65, {"predicted": None, "missing": "no probe"}, 2.7) is None
    assert outside_prediction(None, predicted, None) is None  # nothing measured
    acceptance = outside_prediction(0.4, predicted, 2.1)
    assert acceptance.code == "outside_prediction" and "acceptance was off" in acceptance.message
    assert "length was 2.10 where 2.70" in acceptance.message
    cost = outside_prediction(0.9, predicted, 2.72)
    assert "cost was off" in cost.message and "faster" in cost.message


def test_the_mean_acceptance_length_is_counted_as_llama_cpp_counts_it():
    """1 + accepted / accept calls, and llama.cpp counts a pass's accept call only once some draft was kept: the
    passes before the first kept draft are left out (a setting whose first drafts are cut reads above tokens a
    pass)."""
    known = text((True, 0.5), (True, 0.5), (True, 0.95), (True, 0.95), (False, 0.95), (True, 0.95))
    r = replay(known, Setting(window=2, p_min=0.9), unknown_matches=False)
    assert [(p.kept, p.accepted) for p in r.passes][:2] == [(0, 0), (0, 0)]  # positions 1 and 2 are unsure
    kept_from = next(i for i, p in enumerate(r.passes) if p.kept)
    assert r.mean_accept_len == pytest.approx(1 + r.accepted / (len(r.passes) - kept_from))
    assert r.mean_accept_len > r.tokens_per_pass


NGRAM_LV5 = LOGS / "0c1e57098" / "spec-simple-ngram-mod-lv5"  # Gemma 3 270M, ngram-mod, -n 32 (README there)


def test_an_ngram_runs_passes_are_read_as_counts_and_add_up_to_its_statistics():
    """An n-gram method prints no candidates: its passes are the `accepted A/N` lines, which add up to what its
    statistics line and end block count."""
    log = (NGRAM_LV5.with_suffix(".stderr")).read_text(errors="replace")
    counts = pass_counts(log)
    assert sum(d for d, _ in counts) == 28 and sum(a for _, a in counts) == 28  # #gen tokens, #acc tokens
    assert sum(1 for d, _ in counts if d) == 4  # #gen drafts
    passes = observed(counts)
    assert passes.tokens == len(counts) + 28 and passes.acceptance == 1.0
    assert passes.mean_accept_len == pytest.approx(4.11, abs=0.005)  # `#mean acc len = 4.11`, counted as llama.cpp
    with pytest.raises(ParseError, match="-lv 5"):
        pass_counts("decoded 64 tokens in 1.0 seconds\n")


def test_an_ngram_setting_is_priced_from_its_own_passes_on_any_hosts_costs():
    """One run's passes (6 tokens drafted and kept in each of 10 passes, then 10 plain ones), priced at a CPU-like
    target (a pass of b costs b steps) and a GPU-like one (a pass costs one step): the same text, two answers."""
    passes = observed([(6, 6)] * 10 + [(0, 0)] * 10)
    cpu, gpu = costs(30.0, 30.0), costs(30.0, 0.0)
    cal = calibrate_lookup(passes, cpu, decode_ms=2700.0, lookup_ms=20.0, plain_ms_per_token=30.0)
    assert cal.plain_steps == pytest.approx(1.0) and cal.draft_step_steps == pytest.approx(20 / 20 / 30)
    on_cpu, on_gpu = predict_lookup(passes, cpu, cal), predict_lookup(passes, gpu, cal)
    # CPU: 80 tokens for 10 passes of 7 steps and 10 of 1, lookups aside: 80 / 80 steps at best
    assert on_cpu.speedup < 1 < on_gpu.speedup and on_cpu.break_even > 1 > on_gpu.break_even
    # what the probe run printed beyond its priced passes (2700 ms against 2420) is this setting's own cost: charged
    assert cal.residual == pytest.approx((2700 - 2420) / 2700)
    assert on_cpu.speedup == pytest.approx(80 * 30.0 / 2700)  # here: the probe run's own speed against plain's
    assert on_gpu.speedup == pytest.approx(80 * (1 - cal.residual) / (20 + 20 * cal.draft_step_steps))
    assert on_gpu.tokens_per_pass == 4.0 and on_gpu.acceptance == 1.0 and on_gpu.verify_steps == pytest.approx(1.0)
    assert on_cpu.low < on_cpu.speedup < on_cpu.high  # and widens the interval


def test_an_ngram_setting_that_drafted_nothing_in_its_probe_is_never_predicted_a_win():
    """A probe run that drafted nothing decoded plainly: its run-to-run noise (here it ran 10% fast) is not charged
    as the setting's cost, and the lookups make it a little slower than plain decoding."""
    passes = observed([(0, 0)] * 40)
    target = costs(30.0, 30.0)
    cal = calibrate_lookup(passes, target, decode_ms=40 * 30.0 * 0.9, lookup_ms=4.0, plain_ms_per_token=30.0)
    assert cal.residual < 0
    nothing = predict_lookup(passes, target, cal)
    assert nothing.speedup == pytest.approx(1200 / 1204) and nothing.speedup < 1 and nothing.break_even is None


def test_a_loop_faster_than_llama_benchs_step_saves_once_a_pass_so_plain_passes_cost_plain_decoding():
    """Plain decoding at 0.8 of llama-bench's step (seen on the pair: 0.76-0.92): a pass of one token must cost just
    what plain decoding costs, so a setting that drafts nothing predicts 1x (lookups aside), not 0.8x."""
    target = costs(30.0, 30.0)
    plain = observed([(0, 0)] * 40)
    cal = calibrate_lookup(plain, target, decode_ms=40 * 24.0, lookup_ms=0.0, plain_ms_per_token=24.0)
    assert predict_lookup(plain, target, cal).speedup == pytest.approx(1.0)
    known = text(*[(True, 0.99)] * 200)
    draft = costs(3.0, 0.3)
    fast = calibrate(known, target, draft, decode_ms=1000.0, draft_ms=200.0, plain_ms_per_token=24.0)
    slow = calibrate(known, target, draft, decode_ms=1000.0, draft_ms=200.0, plain_ms_per_token=36.0)
    one = Setting(1, 0, 1.01)  # p_min above every probability: every pass drafts nothing
    assert predict(known, one, target, draft, fast).tokens_per_pass == 1.0
    # priced pass by pass: the target's step, the draft reading the batch of one, its step; against plain decoding
    for cal, t in ((fast, 24.0), (slow, 36.0)):
        per_pass = 30.0 + (t - 30.0) + draft.ms(1) + cal.draft_step_steps * draft.step_ms
        assert predict(known, one, target, draft, cal).speedup == pytest.approx(t / per_pass)
