"""Per-arm warnings: a fixed set of actionable messages, each naming the option or action that helps.

The statistics they read (clean, sample_stdev, bimodal_split, mad_outliers, break_even) are `stats`'.
One call per arm:

    warnings_for(runs=[...decode tok/s per run...],          # CV and MAD outliers
                 spread=[...tok/s per prompt...] or None,    # bimodality (server mode; default: runs)
                 acceptance=0.62, speedup=0.93,              # this arm's mean acceptance, speedup vs baseline
                 drafted=1200, accepted=744,                 # counters, quoted in the 100%-acceptance message
                 sweep_break_even=stats.break_even([(acc, speedup) for every non-baseline arm of the sweep]))

The rules (each a constant below, with its code for JSON and its message template):
- high_cv: sample CV of the per-run speeds above 5% (n >= 2). The advice names GPU clocks only when the runs
  used a GPU (`gpu=True`: a CUDA build on a machine with a GPU), CPU frequency otherwise.
- bimodal: the sorted values split into a low and a high cluster, each of >= 2 values, where the gap between
  the clusters is >= 10% of the median AND >= 4 times the larger within-cluster standard deviation (so an
  ordinary noisy spread never qualifies, and a 59-67 tok/s group beside ~135 tok/s does). n >= 4.
- outliers: modified z-score 0.6745 * (x - median) / MAD above 3.5 (Iglewicz and Hoaglin); when MAD is 0
  (most values equal) the mean absolute deviation scaled by 1.2533 stands in. n >= 5: with three runs the MAD is
  one distance, and any spread flags a run (seen on real sweeps: 1582 beside 1672 and 1683 tok/s).
- no_drafts: a speculative arm (not the baseline) whose ok runs drafted nothing (n_drafted = 0): speculation
  started but never proposed a token, so its speed says nothing about speculation (spec_not_engaged, a failure
  class, is the run where speculation never started). With a draft model (`idle_draft`) the draft still ran at
  every step: its speedup stays, as what the draft cost; without one the arm decoded plainly and has no speedup.
- other_target: the arm's target model file (sha256) is not its reference's: its ratio to the reference compares
  two models (an MTP target beside a plain one), so the summary shows no speedup for it.
- full_acceptance_slowdown: acceptance of 100% (>= 99.95%) while the speedup is below 1.
- below_break_even: acceptance below the sweep's break-even acceptance (see `break_even`).
- output_differs: at temperature 0, outputs of the arm differ from those of the same program and target drafting
  nothing (its control's, or the baseline's where it runs the same program), for the same repeat and prompt
  (store/parity.py counts them per run): in exact arithmetic greedy speculation keeps the target's text, but a
  batched verification can flip a near tie; the message names the first differing token and the share of the text
  after it, and the verdict says so ("Text differs").
- degenerate_loop: ok runs whose generated text loops (parse/repetition.py: in the last half of the generated text,
  LOOP_SHARE or more of the 4-grams repeat earlier ones, and the prompt did not ask for the repetition). A method
  that copies earlier text is accepted almost in full on a loop, so the speed says nothing about text a user wants:
  the verdict never calls such an arm a win.
- unequal_tokens: some of the arm's pairs with its reference generated counts of tokens more than one apart, so
  their speeds cover different text. orch gives a CLI arm's reference the count the arm decoded (run/length_match.py:
  llama-speculative-simple can pass -n by a whole draft); what is left is a count that could not be matched (a
  reference that stopped early, a server request, a program whose count orch cannot set).
- bound_exceeded: the arm's target passes per second (store/figures: tok/s over the tokens a pass yields) above the
  roofline bound. A pass reads the weights once, so that cannot be: the bound is no bound, most often a CPU
  bandwidth measured while something else ran.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from orchestrator import config
from orchestrator.analyze import stats
from orchestrator.parse import repetition

CV_LIMIT = 0.05



@dataclass(frozen=True)
class WarningKind:
    code: str
    template: str  # str.format fields are filled by warnings_for
    gist: str = ""  # what it means, in a few words: the one line per kind under a table (the full text: --explain)


@dataclass(frozen=True)
class StatWarning:
    code: str
    message: str


HIGH_CV = WarningKind("high_cv", "decode speed varies {cv:.1%} between runs (above 5%): raise --repeat, {pin}, and keep "
                      "other work off the machine",
                      gist="decode speed varies more than 5% between runs")
# What steadies the runs depends on where they ran: GPU clocks only matter where a GPU decoded.
PIN_GPU = "pin GPU clocks (nvidia-smi -lgc) and threads (-t)"
PIN_CPU = "pin threads (-t) and the CPU frequency (cpupower frequency-set -g performance)"
BIMODAL = WarningKind("bimodal", "speeds split into two clusters, {low} beside {high} tok/s, so the mean describes "
                      "neither: look at each cluster's runs or prompts (orch runs; the requests table in server "
                      "mode), split the prompt set, or add --warmup if the slow ones are the first runs",
                      gist="speeds split into two clusters")
OUTLIERS = WarningKind("outliers", "{count} of {n} runs far from the median (modified z-score above 3.5: {values} "
                       "tok/s): inspect them with orch show RUN; add --warmup 1 if the first run is slow, or raise "
                       "--repeat",
                       gist="runs far from the median")
FULL_ACCEPTANCE_SLOWDOWN = WarningKind(
    "full_acceptance_slowdown", "100% acceptance yet {speedup:.2f}x the baseline{counters}: check the drafted and "
    "accepted counters with orch show RUN; a draft that is never rejected but slows decoding usually means "
    "speculation is not set up as intended (tiny drafts, draft_max too low, or the counters misread)",
    gist="100% acceptance yet slower than what it is compared with")
NO_DRAFTS = WarningKind(
    "no_drafts", "drafted nothing in {idle} of {ok} ok runs: {what}; an n-gram method needs repeats in the prompt, "
    "a draft needs draft_min at most draft_max and a p_min its tokens reach (orch show RUN shows the counters)",
    gist="drafted nothing in some runs")
BELOW_BREAK_EVEN = WarningKind(
    "below_break_even", "acceptance {acceptance:.1%} is below this sweep's break-even {break_even:.1%} (where "
    "speedup crosses 1x): these drafts cost more than they save here; lower draft_max, raise p_min or draft_min, "
    "or use a draft that agrees more with the target",
    gist="acceptance below the sweep's break-even")
OTHER_TARGET = WarningKind(
    "other_target", "its target model is not {vs}'s ({mine} vs {theirs}): a ratio between them compares two "
    "models, not speculation, so it is shown with no speedup; give each target its own baseline or control arm",
    gist="another target model than what it is compared with: no speedup shown")
OUTPUT_DIFFERS = WarningKind(
    "output_differs", "{counted} outputs differ at temperature 0 from the same program and target's without drafting "
    "(its control's, or the baseline's where it runs the same program){where}: in exact arithmetic a greedy draft "
    "cannot change the target's text, but verifying a batch computes the target's logits in another order than "
    "decoding one token, and a near tie can flip: a finding about this build and backend, not noise; its speedup "
    "still compares the same number of tokens, not the same text after that token (orch show RUN prints a run's "
    "output)",
    gist="outputs differ at temperature 0 from the same program's without drafting")
DEGENERATE_LOOP = WarningKind(
    "degenerate_loop", "{looped} of {ok} ok runs generated text that loops ({share:.0%} of the 4-grams in its last "
    "half repeat earlier ones; text that goes on stays below {limit:.0%}): a method that copies earlier text is "
    "accepted almost in full on a loop, so this speed says nothing about real text and is never called a win; use a "
    "prompt the model continues without looping (a chat model with its template, or fewer tokens with -n)",
    gist="generated text that loops: its speed is no win")
UNEQUAL_TOKENS = WarningKind(
    "unequal_tokens", "in {unequal} of {pairs} pairs it generated {mine} tokens where its reference generated "
    "{theirs}: those speeds cover different text; see the runs' counts with orch runs (n_generated) and compare "
    "over longer generations (a higher -n), where the difference is a small share",
    gist="another number of tokens than what it is compared with")
BOUND_EXCEEDED = WarningKind(
    "bound_exceeded", "its target passes ran at {pct:.0f}% of the {bound:.0f}/s roofline bound ({label} bandwidth), "
    "and a pass cannot beat the bound, since it reads the weights at least once: the bandwidth was measured too "
    "low (a CPU copy benchmark while the machine was busy); delete {cache} on this machine to measure it again "
    "when it is idle, and read roofline_pct as unknown until then",
    gist="faster than the measured bandwidth allows: the bound was measured too low")
WARNING_KINDS = (HIGH_CV, BIMODAL, OUTLIERS, NO_DRAFTS, OTHER_TARGET, FULL_ACCEPTANCE_SLOWDOWN, BELOW_BREAK_EVEN,
                 OUTPUT_DIFFERS, DEGENERATE_LOOP, UNEQUAL_TOKENS, BOUND_EXCEEDED)


def warnings_for(runs: Sequence[float], *, spread: Sequence[float] | None = None, acceptance: float | None = None,
                 speedup: float | None = None, sweep_break_even: float | None = None, drafted: int | None = None,
                 accepted: int | None = None, cv: float | None = None, idle: int = 0, ok: int = 0,
                 gpu: bool = False, idle_draft: bool = False, other_target: tuple[str, str, str] | None = None,
                 outputs_differ: int | None = None, outputs_compared: int | None = None,
                 first_diff_char: int | None = None, first_diff_token: int | None = None,
                 generated: int | None = None, looped: int = 0,
                 loop_share: float | None = None,
                 tokens: tuple[int, int, tuple[int, int], tuple[int, int]] | None = None,
                 roofline: tuple[float, float, str] | None = None) -> list[StatWarning]:
    """The warnings that apply to one arm, in WARNING_KINDS order (see the module docstring for each rule).

    `cv` given (computed where the runs are stored) stands in for the runs' own; the runs may then be left out
    when there are fewer than BIMODAL_MIN_N of them, since no other rule reads so few. other_target: (reference arm,
    this arm's target sha256, the reference's), where they differ. roofline: (share per step in percent, bound,
    bandwidth label).
    """
    out = []
    xs = stats.clean(runs)
    if cv is None and len(xs) >= 2:
        mean = statistics.fmean(xs)
        cv = stats.sample_stdev(xs) / mean if mean else 0.0
    if cv is not None and cv > CV_LIMIT:
        out.append(StatWarning(HIGH_CV.code, HIGH_CV.template.format(cv=cv, pin=PIN_GPU if gpu else PIN_CPU)))
    # Each value list is cleaned once; most arms have too few values for either rule (decided by length alone).
    spread_xs = xs if spread is None else stats.clean(spread)
    split = stats.bimodal_split(spread_xs) if len(spread_xs) >= stats.BIMODAL_MIN_N else None
    if split:
        low, high = split
        out.append(StatWarning(BIMODAL.code, BIMODAL.template.format(low=_span(low), high=_span(high))))
    outliers = stats.mad_outliers(xs) if len(xs) >= stats.OUTLIER_MIN_N else []
    if outliers:
        out.append(StatWarning(OUTLIERS.code, OUTLIERS.template.format(
            count=len(outliers), n=len(xs), values=", ".join(f"{x:.1f}" for x in outliers))))
    if idle:
        what = ("its draft model still ran at every step, so its speedup is what the draft cost" if idle == ok
                and idle_draft else "its speed is plain decoding, so it is shown with no speedup" if idle == ok else
                "its speedup mixes runs that speculated with runs that did not")
        out.append(StatWarning(NO_DRAFTS.code, NO_DRAFTS.template.format(idle=idle, ok=ok, what=what)))
    if other_target:
        vs, mine, theirs = other_target
        out.append(StatWarning(OTHER_TARGET.code, OTHER_TARGET.template.format(vs=vs, mine=mine[:12],
                                                                               theirs=theirs[:12])))
    if acceptance is not None and acceptance >= 0.9995 and speedup is not None and speedup < 1:
        counters = f" (drafted {drafted}, accepted {accepted})" if drafted is not None else ""
        out.append(StatWarning(FULL_ACCEPTANCE_SLOWDOWN.code,
                               FULL_ACCEPTANCE_SLOWDOWN.template.format(speedup=speedup, counters=counters)))
    if acceptance is not None and sweep_break_even is not None and acceptance < sweep_break_even:
        out.append(StatWarning(BELOW_BREAK_EVEN.code, BELOW_BREAK_EVEN.template.format(
            acceptance=acceptance, break_even=sweep_break_even)))
    if outputs_differ:
        token = f"token {first_diff_token}{f' of {generated}' if generated else ''}, " \
            if first_diff_token is not None else ""
        after = f": the last {1 - first_diff_token / generated:.0%} of the text differs" \
            if first_diff_token is not None and generated and first_diff_token <= generated else ""
        where = f" (the first at {token}character {first_diff_char} of the generated text{after})" \
            if first_diff_char is not None else ""
        out.append(StatWarning(OUTPUT_DIFFERS.code, OUTPUT_DIFFERS.template.format(
            counted=f"{outputs_differ} of {outputs_compared}" if outputs_compared else outputs_differ, where=where)))
    if looped:
        out.append(StatWarning(DEGENERATE_LOOP.code, DEGENERATE_LOOP.template.format(
            looped=looped, ok=ok, share=loop_share or 0, limit=repetition.LOOP_SHARE)))
    if tokens:
        unequal, pairs, mine, theirs = tokens
        out.append(StatWarning(UNEQUAL_TOKENS.code, UNEQUAL_TOKENS.template.format(
            unequal=unequal, pairs=pairs, mine=_span(mine), theirs=_span(theirs))))
    if roofline and roofline[0] is not None and roofline[0] > 100:
        pct, bound, label = roofline
        out.append(StatWarning(BOUND_EXCEEDED.code, BOUND_EXCEEDED.template.format(
            pct=pct, bound=bound, label=label or "measured", cache=config.bandwidth_cache())))
    return out


def _span(xs: list[float]) -> str:
    return f"{min(xs):.0f}" if round(min(xs)) == round(max(xs)) else f"{min(xs):.0f}-{max(xs):.0f}"
