"""What each column of `orch summary` and `orch compare` means: one line each, for their --help and the docs.

Plain data (no imports), so the command-line help can show it without loading the analysis code.
"""

from __future__ import annotations

import textwrap

# `orch summary`'s default table: the columns that answer "is speculation faster here" (summaries/draw fits them
# and the parameter columns in 120 characters).
# predicted, beside measured: the why table under it (analyze/why_table)
PARAMETER = "PARAMETER"  # the entry that stands for every parameter column, in the tables and their --help
SUMMARY_DEFAULT = ["arm", "ok", "decode_tps", "ci95", "acceptance", "speedup", "speedup_ci95", "vs", "warnings"]

SUMMARY = {
    "sweep": "the sweep's id (orch summary SWEEP); where a table of several sweeps leaves it out, a line above "
    "each sweep's rows names it with its recipe and build",
    "recipe": "the recipe file the sweep ran",
    "build": "the llama.cpp build: upstream commit and backend",
    "host": "the machine the sweep ran on (its hostname); shown by default where the sweeps ran on several",
    "gpu": "the host's GPUs as NVML names them (- without NVML)",
    "arm": "one set of the recipe's parameters; control:PROGRAM runs that program like its arms, drafting nothing",
    "PARAMETER": "a recipe parameter whose value differs between arms (draft_max, spec, ...; param.NAME where the "
    "name is taken); by default those set in one arm only are left out and values cut to 24 characters",
    "ok": "ok runs / measured runs of the arm (warm-ups and runs a resume replaced are not measured)",
    "decode_tps": "decode tokens per second, mean over the ok runs",
    "ci95": "95% interval of decode_tps (a t-interval on the runs' log speeds: never below zero)",
    "cv": "variation of decode_tps between runs (stdev / mean; above 5% is warning high_cv)",
    "acceptance": "share of drafted tokens the target accepted (- where nothing drafts)",
    "draft_per_gen": "drafted tokens per generated token",
    "mean_accept_len": "tokens gained per target step: 1 + accepted draft tokens / verification steps (mean over "
    "the ok runs; from the statistics line at -lv 4, in server mode from the /metrics counters)",
    "accept_rate_per_pos": "acceptance by draft position over the drafts made, mean over the ok runs (the "
    "statistics line's acc rate/pos divides by target steps, drafts thrown away by "
    "draft_min or p_min included: orch divides by #gen drafts; listed up to the furthest "
    "position any draft was accepted at, later ones accepted nothing; the table shows the "
    "first 4 and how many more; JSON has them all)",
    "seq_acceptance": "share of drafts accepted in full (every drafted token accepted); [low, high] % where some "
    "drafts were shorter than the window and the counters only bound it (JSON: seq_acceptance "
    "null, seq_acceptance_low/_high; -lv 5 prints one line per draft and makes it exact)",
    "speedup": "decode speed over the `vs` arm's, paired by repeat (and prompt in server mode); above 1 is faster",
    "speedup_ci95": "95% interval of speedup: only one wholly above 1 says speculation is faster here",
    "predicted": "the speedup predicted for the arm before the sweep's first run, against its control, from this host's "
    "llama-bench probe and the pair's acceptance replayed from one probe (`orch probe`); shown beside "
    "the measured speedup right or wrong, and warned of (outside_prediction) where the measurement "
    "falls outside its interval (JSON: predicted_low/_high; prediction_missing says which input there "
    "was none of) (docs/draft-models.md, Predicted before running)",
    "predicted_ci95": "95% interval of predicted: the replay's bounds and the probes' own noise",
    "modelled_speedup": "after the run, not a prediction: Leviathan et al.'s model fed the arm's own measured tokens "
    "per pass, mean draft length and draft cost, with verification costing what the sweep's "
    "other arms measured at its batch (one target step without them): why the arm ran as fast "
    "as it did; shown only within 25% of the measured speedup or inside its interval, - elsewhere "
    "(JSON: modelled_speedup_unchecked) (docs/telemetry.md, Modelled speedup)",
    "vs": "the arm speedup is against: its control (its own program drafting nothing; `control` in the default "
    "table) where it has one, else the baseline",
    "outputs_differ": "at temperature 0, outputs that differ from the same program and target's without drafting "
    "(its control's, or the baseline's where it runs the same program; same repeat and prompt) / "
    "outputs compared (a control, or a run that drafted nothing, is not compared); warning "
    "output_differs when any do",
    "prompt_tps": "prompt processing tokens per second",
    "bound_tps": "the target passes per second memory bandwidth allows: bandwidth / bytes one decode step reads",
    "roofline_pct": "target passes per second (decode_tps over the tokens a pass yields) as a share of bound_tps; "
    "above 100% the bandwidth was measured too low",
    "joules_per_token": "GPU energy per generated token (mean power of the busy GPUs over the generation window x "
    "its length / tokens; shown where NVML reported power: docs/telemetry.md, Energy per token)",
    "ppl": "quality mode: the arm's target's perplexity on the evaluation text (llama-perplexity at quality_ctx, "
    "with the arm's KV-cache types; one measurement per model file, build, text, context and cache type)",
    "dppl_pct": "quality mode: perplexity over the base model's (quality_base) on the same text and context, "
    "minus 1, in percent: the quality a quant or cache type costs",
    "kld": "quality mode: mean KL divergence of the arm's next-token distribution from the base model's (0: the "
    "same model)",
    "same_top_p": "quality mode: share of positions where the arm's most likely token is the base model's",
    "warnings": "warning codes; a `warning:` line below the table says what each means and what helps",
}

COMPARE = {
    "recipe": "the recipe file, where the tests are of several (a line above its rows in the table; the first 8 hex "
    "digits of its text's hash follow where one name has several texts)",
    "recipe_hash": "the recipe text's sha256 (12 hex digits), with --wide where tests of several texts are shown",
    "arm": "the arm (the head build's name for it, where the two differ)",
    "PARAMETER": "a recipe parameter whose value differs between the arms of one recipe; by default those set in "
    "one arm only are left out and values cut to 24 characters",
    "target_sha256": "the target model file's content (12 hex digits), shown when it tells two tests apart",
    "draft_sha256": "the draft model file's content (12 hex digits), shown when it tells two tests apart",
    "prompt_set": "the server prompt set, shown when it tells two tests apart",
    "mode": "cli or server, shown when it tells two tests apart",
    "base_n": "ok runs on the base build",
    "head_n": "ok runs on the head build",
    "base_mean": "decode tokens per second on the base build, mean over its ok runs",
    "head_mean": "decode tokens per second on the head build, mean over its ok runs",
    "ratio": "head_mean / base_mean: above 1, head decodes faster",
    "ratio_ci95": "95% interval of ratio",
    "p_value": "Mann-Whitney p of the two sides' runs",
    "verdict": "regression or improvement only beyond --threshold and statistically different, else no significant "
    "change; newly failing, newly skipped, newly ok, only in base, only in head, same build",
}


def help_block(glossary: dict[str, str], heading: str, width: int = 100) -> str:
    """The glossary as a click help paragraph that keeps its lines (\\b), each entry wrapped under its text."""
    pad = max(map(len, glossary)) + 4
    entries = [
        textwrap.fill(text, width, initial_indent=f"  {name}".ljust(pad), subsequent_indent=" " * pad)
        for name, text in glossary.items()
    ]
    return "\b\n" + heading + "\n" + "\n".join(entries)
