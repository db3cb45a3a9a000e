"""Failure classes from a run's log text and exit status.

Precedence: a timeout explains everything after it; then the log's own words (most specific first); then a
killing signal; then "exit 0 but nothing was drafted" for runs that were meant to speculate; then any other
non-zero exit. The log wins over the signal because llama.cpp turns several clean errors into aborts
(an uncaught vocab-mismatch exception is SIGABRT, a missing target model segfaults speculative-simple).
"""

from __future__ import annotations

import re

from .lines import clean_lines
from .spec import parse_spec

FAILURE_CLASSES = ("vocab_mismatch", "unknown_flag", "model_load", "out_of_memory", "timeout",
                   "crash_signal", "spec_not_engaged", "truncated_log", "parse_error", "other",
                   "spec_unsupported", "spec_mismatch")

# Checked in this order. OOM comes before model_load: an allocation failure during loading is reported as
# `error loading model: unable to allocate CUDA0 buffer`, and the allocation is the cause worth naming.
SIGNATURES: list[tuple[str, re.Pattern]] = [
    # Every era's words (llama-cpp-python 0.3.8 .. 0.3.36 trees): common/speculative.cpp's checks, the server's
    # refusal of an incompatible draft (2025), and the 2026 compatibility line.
    ("vocab_mismatch", re.compile(
        r"draft model vocab(?: type)? must (?:closely )?match target model"
        r"|draft model (?:bos|eos|special) tokens must match"
        r"|draft vocab (?:special tokens|vocab) must match target vocab"
        r"|the draft model '.*' is not compatible with the target model"
        r"|the target and draft vocabs are not compatible")),
    # The models do not fit the speculation method, found only by the binary (orch's pre-flight stops the cases
    # GGUF metadata shows, as spec_mismatch): before unknown_flag, as an unknown type is also an argument error.
    ("spec_unsupported", re.compile(
        r"unknown speculative type"
        r"|requires 'target_layers'"
        r"|layer input tensor is null"
        r"|t_layer_inp"
        r"|draft model is not eagle3"
        r"|target layer id \d+ exceeds target n_layer"
        r"|context type MTP requested but model doesn't contain MTP layers"
        r"|embd row width \d+ does not match the decoder input")),
    ("unknown_flag", re.compile(
        r"error while handling argument"
        r"|error: invalid argument"
        r"|error: unknown argument")),
    ("out_of_memory", re.compile(
        r"out of memory"
        r"|cudaMalloc failed"
        r"|std::bad_alloc"
        r"|ErrorOutOfDeviceMemory"
        r"|unable to allocate \S+ buffer"
        r"|failed to allocate (?:\S+ )?(?:buffer|compute|graph)")),
    ("model_load", re.compile(
        r"failed to load (?:draft )?model"
        r"|error loading model"
        r"|failed to open GGUF file"
        r"|unable to load model"
        r"|failed to create draft context"
        r"|--model-draft is required")),
    # A request the model cannot take (2025: "the prompt exceeds the context size", later "prompt is too long"):
    # no class of its own, but the line is the reason.
    ("other", re.compile(
        r"the prompt exceeds the context size"
        r"|prompt is too long")),
    ("spec_not_engaged", re.compile(
        r"failed to initialize speculative decoding"
        r"|no implementations specified for speculative decoding")),
]

# Early 2026 went on by translating tokens between the vocabularies (`... not compatible - tokens will be
# translated between the two`): not a failure by itself.
TRANSLATED = "tokens will be translated between the two"
# Exit statuses a shell reports for a signal (128 + N), for callers that only have the number.
SHELL_SIGNAL_MIN = 129


def match_signature(text: str) -> str | None:
    translated = TRANSLATED in text
    for name, pattern in SIGNATURES:
        if name == "vocab_mismatch" and translated:
            continue  # its debug lines say "must match", yet the run goes on through translation
        if pattern.search(text):
            return name
    return None


def failure_signature(text: str) -> str | None:
    """The class a known error line gives the run (match_signature), but a log whose statistics show drafts is
    never "not engaged", whatever else it says (0c1e57098's server logs "no implementations specified" for a slot
    that did not speculate)."""
    found = match_signature(text)
    if found == "spec_not_engaged" and drafted(parse_spec(clean_lines(text))):
        return None
    return found


def classify_failure(text: str, *, returncode: int | None, signal: int | None, timed_out: bool,
                     expects_speculation: bool) -> str | None:
    """One of FAILURE_CLASSES, or None for a successful run."""
    if timed_out:
        return "timeout"
    if found := failure_signature(text):
        return found
    if signal is not None or (returncode is not None and (returncode < 0 or returncode >= SHELL_SIGNAL_MIN)):
        return "crash_signal"
    if returncode == 0:
        if expects_speculation and not speculation_ran(text):
            return "spec_not_engaged"
        return None
    return "other"


def speculation_ran(text: str) -> bool:
    """Speculation was set up and asked for drafts, whether or not any draft survived.

    Evidence: drafted tokens; a statistics line counting calls (an n-gram method on a prompt without repeats
    drafts nothing, yet runs); or the speculative end block of a run that did not fall back to translating
    between vocabularies (a draft_min above what the draft ever reaches also drafts nothing, and that is a
    measurement, not a failure).
    """
    spec = parse_spec(clean_lines(text))  # parsed once for all three kinds of evidence
    if drafted(spec):
        return True
    if any((s.calls_gen or s.calls or 0) > 0 for s in spec.stats):
        return True
    return spec.end.n_drafted is not None and TRANSLATED not in text


def drafted(spec) -> int | None:
    """Drafted tokens seen anywhere in the log: end block, statistics lines, or server acceptance lines."""
    counts = [spec.end.n_drafted, *(s.gen_tokens for s in spec.stats), *(a.generated for a in spec.server)]
    known = [c for c in counts if c is not None]
    return max(known) if known else None
