"""Every warning orch gives an arm, as one table: its code (JSON, CSV, `orch summary --explain CODE`), its message
template, its gist (the one line per kind under a table), when it fires (`rule`) and what to do (`action`).
docs/warnings.md is made from this table (analyze/warning_docs.py), so the page and the code cannot disagree; the
rule that fires each kind is in analyze/warnings.py.
"""

from __future__ import annotations

from dataclasses import dataclass

CV_LIMIT = 0.05


@dataclass(frozen=True)
class WarningKind:
    code: str
    template: str  # str.format fields, filled by its rule (analyze/warnings.py)
    gist: str = ""  # what it means, in a few words: the one line per kind under a table (the full text: --explain)
    rule: str = ""  # when it fires, exactly (docs/warnings.md and `orch summary --explain CODE`)
    action: str = ""  # what to do about it


@dataclass(frozen=True)
class StatWarning:
    code: str
    message: str


HIGH_CV = WarningKind(
    "high_cv",
    "decode speed varies {cv:.1%} between runs (above 5%): raise --repeat, {pin}, and keep other work off the machine",
    gist="decode speed varies more than 5% between runs",
    rule=(
        "the sample coefficient of variation (stdev / mean) of the arm's per-run decode speeds is above 5%, with "
        "two runs or more."
    ),
    action=(
        "Raise --repeat; keep other work off the machine (llama.cpp's threads spin: a neighbour's job halves a "
        "run); pin threads (-t) and, on a CPU, the frequency governor (cpupower frequency-set -g performance), "
        "on a GPU its clocks (nvidia-smi -lgc). A high_cv arm's interval is wide: read it before its mean."
    ),
)
# What steadies the runs depends on where they ran: GPU clocks only matter where a GPU decoded.
PIN_GPU = "pin GPU clocks (nvidia-smi -lgc) and threads (-t)"
PIN_CPU = "pin threads (-t) and the CPU frequency (cpupower frequency-set -g performance)"
BIMODAL = WarningKind(
    "bimodal",
    "speeds split into two clusters, {low} beside {high} tok/s, so the mean describes "
    "neither: look at each cluster's runs or prompts (orch runs; the requests table in server "
    "mode), split the prompt set, or add --warmup if the slow ones are the first runs",
    gist="speeds split into two clusters",
    rule=(
        "with four values or more (runs, or per-prompt speeds in server mode), the sorted values split into a low "
        "and a high cluster of two or more each, the gap between them at least 10% of the median and at least 4 "
        "times the larger cluster's standard deviation (an ordinary noisy spread never qualifies)."
    ),
    action=(
        "Look at each cluster's runs (`orch runs`, `orch show RUN`) or prompts (the requests table in server "
        "mode): slow first runs want --warmup; two kinds of prompt want two prompt sets."
    ),
)
OUTLIERS = WarningKind(
    "outliers",
    "{count} of {n} runs far from the median (modified z-score above 3.5: {values} "
    "tok/s): inspect them with orch show RUN; add --warmup 1 if the first run is slow, or raise "
    "--repeat",
    gist="runs far from the median",
    rule=(
        "with five runs or more, a run's modified z-score 0.6745 (x - median) / MAD is above 3.5 (Iglewicz and "
        "Hoaglin; where the MAD is 0, the mean absolute deviation times 1.2533 stands in). Fewer runs never flag: "
        "with three the MAD is one distance."
    ),
    action="Inspect the run with `orch show RUN`; add --warmup 1 if the first run is slow; raise --repeat.",
)
SLOW_FIRST = 0.5  # a first run below this share of every other run's speed is "far slower"
SLOW_FIRST_RUN = WarningKind(
    "slow_first_run",
    "its first run decoded at {first:.1f} tok/s, {times:.1f}x slower than the median of the rest "
    "({rest:.1f} tok/s): a cold start (the model not yet in the page cache, clocks still ramping up); add --warmup 1, "
    'or "warmup": 1 in the recipe\'s meta, and run it again',
    gist="first run far slower than the rest: a cold start",
    rule=(
        f"with three ok runs or more, the arm's first measured run (in the order they ran) decoded at less than "
        f"{SLOW_FIRST:.0%} of the slowest of its other runs (as hyperfine warns of a slow first run)."
    ),
    action=(
        'Add warm-up runs: `--warmup 1` on `orch run`, or `"warmup": 1` in the recipe\'s meta (then every run '
        "of it warms up each arm first); warm-up runs are stored, never counted. Until then the arm's mean and "
        "interval carry the cold run."
    ),
)
FULL_ACCEPTANCE_SLOWDOWN = WarningKind(
    "full_acceptance_slowdown",
    "100% acceptance yet {speedup:.2f}x the baseline{counters}: check the drafted and "
    "accepted counters with orch show RUN; a draft that is never rejected but slows decoding usually means "
    "speculation is not set up as intended (tiny drafts, draft_max too low, or the counters misread)",
    gist="100% acceptance yet slower than what it is compared with",
    rule="acceptance of 100% (at least 99.95%) while the speedup is below 1x.",
    action=(
        "Check the drafted and accepted counters (`orch show RUN`): a draft never rejected that still slows "
        "decoding pays more per token than it saves (on a CPU a verification pass of k tokens costs about k "
        "target steps: the why table under the summary says so), or speculation is not set up as intended (tiny "
        "drafts, draft_max too low)."
    ),
)
NO_DRAFTS = WarningKind(
    "no_drafts",
    "drafted nothing in {idle} of {ok} ok runs: {what}; an n-gram method needs repeats in the prompt, "
    "a draft needs draft_min at most draft_max and a p_min its tokens reach (orch show RUN shows the counters)",
    gist="drafted nothing in some runs",
    rule=(
        "a speculating arm (not the baseline) whose ok runs drafted nothing (n_drafted = 0): speculation started "
        "but never proposed a token. With a draft model the draft still ran at every step, so its speedup stays, "
        "as what the draft cost; without one the arm decoded plainly and is shown with no speedup. "
        "(spec_not_engaged, a failure class, is a run where speculation never started.)"
    ),
    action=(
        "An n-gram method needs repeats in the prompt; a draft model needs draft_min at most draft_max and a "
        "p_min its tokens reach. The counters are in `orch show RUN`. Such an arm is never the verdict's best."
    ),
)
BELOW_BREAK_EVEN = WarningKind(
    "below_break_even",
    "acceptance {acceptance:.1%} is below this sweep's break-even {break_even:.1%} (where "
    "speedup crosses 1x): these drafts cost more than they save here; lower draft_max, raise p_min or draft_min, "
    "or use a draft that agrees more with the target",
    gist="acceptance below the sweep's break-even",
    rule=(
        "the arm's acceptance is below the sweep's break-even acceptance: the acceptance where the speedup "
        "crosses 1x, read from the sweep's own drafting arms (a line through their acceptance and speedup), when "
        "they span it."
    ),
    action=(
        "These drafts cost more than they save here: lower draft_max, raise p_min or draft_min, or use a draft "
        "model that agrees more with the target."
    ),
)
OTHER_TARGET = WarningKind(
    "other_target",
    "its target model is not {vs}'s ({mine} vs {theirs}): a ratio between them compares two "
    "models, not speculation, so it is shown with no speedup; give each target its own baseline or control arm",
    gist="another target model than what it is compared with: no speedup shown",
    rule=(
        "the arm's target model file (its sha256) is not its reference's: its ratio to the reference would "
        "compare two models (an MTP target beside a plain one), so no speedup is shown."
    ),
    action="Give each target its own baseline or control arm in the recipe.",
)
OUTPUT_DIFFERS = WarningKind(
    "output_differs",
    "{counted} outputs differ at temperature 0 from the same program and target's without drafting "
    "(its control's, or the baseline's where it runs the same program){where}: in exact arithmetic a greedy draft "
    "cannot change the target's text, but verifying a batch computes the target's logits in another order than "
    "decoding one token, and a near tie can flip: a finding about this build and backend, not noise; its speedup "
    "still compares the same number of tokens, not the same text after that token (orch show RUN prints a run's "
    "output)",
    gist="outputs differ at temperature 0 from the same program's without drafting",
    rule=(
        "at temperature 0, outputs of the arm differ from those of the same program and target drafting nothing "
        "(its control's, or the baseline's where it runs the same program), for the same repeat and prompt. In "
        "exact arithmetic greedy speculation keeps the target's text; a batched verification computes the logits "
        "in another order and can flip a near tie."
    ),
    action=(
        "Read the first differing token and the share of text after it (the message and `orch show RUN`); the "
        "speedup still compares the same number of tokens, not the same text. A finding about the build and "
        "backend, not noise; `orch tune` leaves such settings out unless --allow-output-change."
    ),
)
DEGENERATE_LOOP = WarningKind(
    "degenerate_loop",
    "{looped} of {ok} ok runs generated text that loops ({share:.0%} of the 4-grams in its last "
    "half repeat earlier ones; text that goes on stays below {limit:.0%}): a method that copies earlier text is "
    "accepted almost in full on a loop, so this speed says nothing about real text and is never called a win; use a "
    "prompt the model continues without looping (a chat model with its template, or fewer tokens with -n)",
    gist="generated text that loops: its speed is no win",
    rule=(
        "ok runs whose generated text loops: in the last half of the generated text 50% or more of the 4-grams "
        "repeat earlier ones, and the prompt did not ask for the repetition (parse/repetition.py). Judged on the "
        "same tokens as the arm's reference."
    ),
    action=(
        "Use a prompt the model continues without looping (a chat model with its template, or fewer tokens with "
        "-n). A method that copies earlier text is accepted almost in full on a loop, so such an arm is never "
        "called a win."
    ),
)
UNEQUAL_TOKENS = WarningKind(
    "unequal_tokens",
    "in {unequal} of {pairs} pairs it generated {mine} tokens where its reference generated "
    "{theirs}: those speeds cover different text; see the runs' counts with orch runs (n_generated) and compare "
    "over longer generations (a higher -n), where the difference is a small share",
    gist="another number of tokens than what it is compared with",
    rule=(
        "some of the arm's pairs with its reference generated counts of tokens more than one apart, so their "
        "speeds cover different text. orch gives a CLI arm's reference the count the arm decoded (a count-matched "
        "rerun); what is left is a count that could not be matched (a reference that stopped early, a server "
        "request, a program whose count orch cannot set)."
    ),
    action=(
        "See the runs' counts with `orch runs` (n_generated); compare over longer generations (a higher -n), "
        "where the difference is a small share."
    ),
)
BOUND_EXCEEDED = WarningKind(
    "bound_exceeded",
    "its target passes ran at {pct:.0f}% of the {bound:.0f}/s roofline bound ({label} bandwidth), "
    "and a pass cannot beat the bound, since it reads the weights at least once: the bandwidth was measured too "
    "low (a CPU copy benchmark while the machine was busy); read roofline_pct as unknown here (orch measures it "
    "again after 5 minutes, and raises it to the rate such a run read)",
    gist="faster than the measured bandwidth allows: the bound was measured too low",
    rule=(
        "the arm's target passes per second (tok/s over the tokens one pass yields) are above the roofline bound "
        "(memory bandwidth over the bytes a decode step reads). A pass reads the weights at least once, so this "
        "cannot be: the bandwidth was measured too low, most often a CPU copy benchmark run while something else "
        "ran."
    ),
    action=(
        "Read roofline_pct as unknown for that sweep. orch keeps a bandwidth measured beside other work only 5 "
        "minutes, and a run that passes the bound raises it to that run's read rate for the runs after it; "
        "measure with nothing else running."
    ),
)
OUTSIDE_PREDICTION = WarningKind(
    "outside_prediction",
    "measured {measured:.2f}x, outside the {predicted:.2f}x [{low:.2f}, {high:.2f}] predicted before it ran: {off}",
    gist="measured outside what was predicted before it ran",
    rule=(
        "a drafting arm's measured speedup lies outside the 95% interval of the speedup predicted for it before "
        "the sweep's first run (`orch probe`: this host's llama-bench costs and the pair's acceptance replayed). "
        "The input that was off is read from what the runs logged: llama.cpp's mean acceptance length more than 5% "
        "from the replay's (counted as llama.cpp counts it) means the acceptance was; else the machine charged "
        "otherwise than its probe said."
    ),
    action=(
        "Where the acceptance was off, the text differed from the probe's (batched verification flipping a near "
        "tie, or another workload): `orch probe` measures it again for this workload. Where the cost was off, "
        "probe again alone (`orch probe --again`): a probe or a sweep beside other work is noise."
    ),
)
BUSY_MACHINE = WarningKind(
    "busy_machine",
    "other programs used {pct:.0f}% of the machine during its runs ({busiest}): its speed was measured beside "
    "other work, so its intervals are not to be trusted; measure alone (stop the other work, or wait for it with "
    "`orch run --wait-quiet`)",
    gist="measured beside other work: other programs used the CPU",
    rule=(
        "in one of the arm's ok runs, the host's other processes (every one but orch and the run it measures) used "
        "more than 10% of all the machine's cores (ORCH_BUSY_PCT sets the share), counted from every process's CPU "
        "time before and after the run (machine/host_load.py). llama.cpp's threads spin: beside another busy "
        "program a run loses speed in bursts, and its interval widens or lies."
    ),
    action=(
        "Measure alone: stop the other work, or start the sweep with `orch run --wait-quiet` (it waits until the "
        "other processes use less than that share); then run the arm again. Its figures, until then, describe a "
        "shared machine."
    ),
)
WARNING_KINDS = (
    HIGH_CV,
    BIMODAL,
    OUTLIERS,
    SLOW_FIRST_RUN,
    NO_DRAFTS,
    OTHER_TARGET,
    FULL_ACCEPTANCE_SLOWDOWN,
    BELOW_BREAK_EVEN,
    OUTPUT_DIFFERS,
    DEGENERATE_LOOP,
    UNEQUAL_TOKENS,
    BOUND_EXCEEDED,
    BUSY_MACHINE,
    OUTSIDE_PREDICTION,
)
ACCEPT_LEN_OFF = 0.05  # the logged mean acceptance length this far from the predicted: the acceptance was off
