"""A draft setting's speedup predicted before it runs: what the pair keeps on a text (analyze/acceptance_model,
replayed from one acceptance probe) priced at what the machine charges (analyze/machine_costs, a llama-bench probe).

A pass that keeps g drafted tokens costs, in llama-speculative-simple at 0c1e57098:

    C_t(g + 1)      the target verifying them (a batch of g + 1: the pass's last token and the drafts)
  + C_d(g + 1)      the draft model reading that same batch (common_speculative_process) before it drafts again
  + s * c           the draft's s steps (one token each) with their sampling

and yields accepted + 1 tokens, each sampled and handled as plain decoding handles its one: plain decoding costs
t = C_t(1) + u a token, and a pass pays u for each token it yields (u > 0), or saves -u once (u < 0: llama-bench's
call costing more than the loop's step). C_t and C_d come from this host's llama-bench
probe; t and c from the acceptance probe's two runs (t: the plain run's ms a token; c: the probe run's drafting
time, `dur g` of its statistics line, over its draft steps), each kept as a multiple of the probe host's own step so
that another host's llama-bench probe can price them (issue 46, item 6). Priced so, the probe run's own passes
should cost what it printed; what they leave unexplained (`residual`, a share of its decode time) is how far
llama-bench's batches are from this machine's loop (llama-bench asks for the last position's logits, a verification
for every position's), and it widens every interval. It is not fitted away: one 64-token run is too noisy to scale
verification by (on the pair, a scale fitted so moved one probe's predictions 15-20% further from what its sweeps
measured). The interval: the replay's two bounds (positions the probe never revealed taken as matches or misses),
that residual and the timings' standard errors, on a log scale (an interval of a ratio, never below 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from orchestrator.analyze.acceptance_model import Pass, Replay, Revealed, Setting, replay
from orchestrator.analyze.machine_costs import PassCosts

Z95 = 1.96


@dataclass(frozen=True)
class Calibration:
    """What the acceptance probe's runs measured beyond llama-bench, in steps of the probe host's own models."""

    plain_steps: float  # t / C_t(1): plain decoding's ms a token over the target's step
    draft_step_steps: float  # c / C_d(1): a draft step with its sampling over the draft's pass of one
    residual: float = 0.0  # the share of the probe run's decode time llama-bench's costs left unexplained (signed)


@dataclass(frozen=True)
class Prediction:
    speedup: float
    low: float
    high: float
    tokens_per_pass: float
    mean_accept_len: float | None  # as llama.cpp's statistics line counts it: what the run's log is checked against
    acceptance: float | None  # accepted / drafted over kept drafts
    draft_ms_per_token: float  # drafting (the draft's batch and steps) per generated token
    verify_steps: float  # C_t(g + 1) a pass, in target steps, averaged over passes
    break_even: float | None  # the acceptance at which this setting would run at 1x (> 1: none can pay)
    unknown_used: int  # positions the probe never revealed that the replay assumed (they make the interval)


def calibrate(
    known: Revealed,
    target: PassCosts,
    draft: PassCosts,
    *,
    decode_ms: float,
    draft_ms: float,
    plain_ms_per_token: float,
) -> Calibration:
    """From the probe's own run at its window (decode time, drafting time: `dur g` of its statistics line) and the
    plain target's ms a token: t and c as multiples of this host's steps, and the residual of the probe run."""
    own = replay(known, Setting(known.window), unknown_matches=True)
    steps = sum(p.draft_steps for p in own.passes) or 1
    cal = Calibration(
        plain_steps=plain_ms_per_token / target.step_ms, draft_step_steps=draft_ms / steps / draft.step_ms
    )
    unexplained = decode_ms - _spent(own, target, draft, cal)
    return Calibration(cal.plain_steps, cal.draft_step_steps, residual=unexplained / decode_ms)


def predict(known: Revealed, setting: Setting, target: PassCosts, draft: PassCosts, cal: Calibration) -> Prediction:
    """The setting's speedup against plain decoding on this host (target and draft: its probe), with its interval."""
    bounds = [replay(known, setting, unknown_matches=m) for m in (True, False)]
    speeds = [_speedup(r, target, draft, cal) for r in bounds]
    point = math.sqrt(speeds[0] * speeds[1])
    error = math.sqrt((Z95 * _timing_error(target)) ** 2 + (Z95 * _timing_error(draft)) ** 2 + cal.residual**2)
    middle = bounds[0]
    passes = len(middle.passes)
    drafting = sum(draft.ms(p.kept + 1) + p.draft_steps * cal.draft_step_steps * draft.step_ms for p in middle.passes)
    verify = sum(target.steps(p.kept + 1) for p in middle.passes) / passes
    return Prediction(
        speedup=point,
        low=min(speeds) / math.exp(error),
        high=max(speeds) * math.exp(error),
        tokens_per_pass=middle.tokens_per_pass,
        mean_accept_len=middle.mean_accept_len,
        acceptance=middle.acceptance,
        draft_ms_per_token=drafting / middle.tokens,
        verify_steps=verify,
        break_even=_break_even(middle, target, draft, cal),
        unknown_used=middle.unknown_used,
    )


def _spent(r: Replay, target: PassCosts, draft: PassCosts, cal: Calibration) -> float:
    """The replay's passes in ms: batches, draft steps, and plain decoding's own cost beside a step (_beside)."""
    per_pass, per_token = _beside(target, cal)
    return sum(
        target.ms(p.kept + 1)
        + draft.ms(p.kept + 1)
        + p.draft_steps * cal.draft_step_steps * draft.step_ms
        + per_pass
        + (p.accepted + 1) * per_token
        for p in r.passes
    )


def _beside(target: PassCosts, cal: Calibration) -> tuple[float, float]:
    """What plain decoding's token costs beside llama-bench's step, (per pass, per token yielded): where the loop is
    slower (sampling, bookkeeping), the excess is paid per token yielded; where it is faster (llama-bench's call
    costs more than the loop's: seen at 0.76-0.92 of a step on the pair), the saving is per pass, one per call.
    Either way a pass of one token yields plain decoding's speed exactly (it predicted 0.77x for Gemma's n-gram arms
    that drafted nothing, when the saving was left out)."""
    beside = (cal.plain_steps - 1) * target.step_ms
    return min(beside, 0.0), max(beside, 0.0)


def _speedup(r: Replay, target: PassCosts, draft: PassCosts, cal: Calibration) -> float:
    return r.tokens * cal.plain_steps * target.step_ms / _spent(r, target, draft, cal)


def _break_even(r: Replay, target: PassCosts, draft: PassCosts, cal: Calibration) -> float | None:
    """The acceptance (accepted / drafted) at which the replay's passes, at their cost, would yield plain decoding's
    speed: (spent / t - passes) / drafted; above 1, no acceptance can pay."""
    if not r.drafted:
        return None
    return (_spent(r, target, draft, cal) / (cal.plain_steps * target.step_ms) - len(r.passes)) / r.drafted


def _timing_error(costs: PassCosts) -> float:
    """The largest relative standard error of the mean among a model's probed passes: the prediction's share."""
    return max((t.relative_error for t in costs.passes.values()), default=0.0)


# An n-gram method (ngram-simple, -map-k, -mod, -cache) has no draft model: what it drafts comes from a lookup in
# the text so far, so its passes are not replayed for other settings but taken as one probe run of the arm's own
# setting gave them (run/lookup_probe). A pass costs C_t(g + 1), the lookups (`dur g` of the run's statistics line,
# kept per pass in target steps: Calibration.draft_step_steps) and plain decoding's own cost per token yielded; and
# what that leaves of the probe run's decode time unexplained is charged too, as the same share. Here, unlike a
# draft model's replay, the residual is this very setting's on this very text (a verification's logits at every
# position, which llama-bench's pass does not ask for: 23% of the pair's ngram-mod run on the list), so it is part
# of the setting's cost, not an extrapolation; on another host the share is assumed to hold.


def observed(counts: list[tuple[int, int]]) -> Replay:
    """A run's own passes, (drafted, accepted) each (parse/draft_trace.pass_counts), as the replay of its setting."""
    return Replay(tuple(Pass(kept=drafted, draft_steps=0, accepted=accepted) for drafted, accepted in counts), 0)


def calibrate_lookup(
    passes: Replay, target: PassCosts, *, decode_ms: float, lookup_ms: float, plain_ms_per_token: float
) -> Calibration:
    """calibrate for an n-gram method's probe run: its lookups a pass in target steps, and its residual."""
    cal = Calibration(
        plain_steps=plain_ms_per_token / target.step_ms,
        draft_step_steps=lookup_ms / len(passes.passes) / target.step_ms,
    )
    return Calibration(
        cal.plain_steps, cal.draft_step_steps, residual=(decode_ms - _spent_lookup(passes, target, cal)) / decode_ms
    )


def predict_lookup(passes: Replay, target: PassCosts, cal: Calibration) -> Prediction:
    """An n-gram setting's speedup against plain decoding from its probe run's passes priced at target's costs (this
    host's, or another's), with its interval (the timings' errors and the probe run's residual)."""
    t = cal.plain_steps * target.step_ms
    # the probe run's unexplained share charged, where it drafted: a run that drafted nothing decoded plainly, and
    # what it leaves unexplained is that run's noise (charged, it would make an arm that drafts nothing a win)
    spent = _spent_lookup(passes, target, cal) / ((1 - cal.residual) if passes.drafted else 1.0)
    error = math.sqrt((Z95 * _timing_error(target)) ** 2 + cal.residual**2)
    speed = passes.tokens * t / spent
    lookups = cal.draft_step_steps * target.step_ms * len(passes.passes)
    drafted = passes.drafted
    break_even = ((spent / t - len(passes.passes)) / drafted) if drafted else None
    return Prediction(
        speedup=speed,
        low=speed / math.exp(error),
        high=speed * math.exp(error),
        tokens_per_pass=passes.tokens_per_pass,
        mean_accept_len=passes.mean_accept_len,
        acceptance=passes.acceptance,
        draft_ms_per_token=lookups / passes.tokens,
        verify_steps=sum(target.steps(p.kept + 1) for p in passes.passes) / len(passes.passes),
        break_even=break_even,
        unknown_used=0,
    )


def _spent_lookup(r: Replay, target: PassCosts, cal: Calibration) -> float:
    per_pass, per_token = _beside(target, cal)
    return sum(
        target.ms(p.kept + 1) + cal.draft_step_steps * target.step_ms + per_pass + (p.accepted + 1) * per_token
        for p in r.passes
    )
