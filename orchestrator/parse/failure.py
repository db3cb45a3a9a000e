"""Failure classes from a run's log text and, where known, how its process ended: the one definition both a run
(run/one_run.py, run/server.py) and `orch parse` of saved logs (parse/saved_logs.py) use.

Precedence: a timeout explains everything after it; then the log's own words (most specific first); then a
killing signal (for a saved log, whose exit status is unknown, an abort's line stands for it); then any other
non-zero exit; then, for an exit 0, a log without the block its tool always prints (truncated_log); then "nothing
was drafted" for runs that were meant to speculate. The log wins over the signal because llama.cpp turns several
clean errors into aborts (an uncaught vocab-mismatch exception is SIGABRT, a missing target model segfaults
speculative-simple).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .lines import clean_lines, strip_prefixes
from .spec import parse_spec

FAILURE_CLASSES = (
    "vocab_mismatch",
    "unknown_flag",
    "model_load",
    "out_of_memory",
    "timeout",
    "crash_signal",
    "spec_not_engaged",
    "truncated_log",
    "parse_error",
    "other",
    "spec_unsupported",
    "spec_mismatch",
)

# Checked in this order. OOM comes before model_load: an allocation failure during loading is reported as
# `error loading model: unable to allocate CUDA0 buffer`, and the allocation is the cause worth naming.
SIGNATURES: list[tuple[str, re.Pattern]] = [
    # Every era's words (llama-cpp-python 0.3.8 .. 0.3.36 trees): common/speculative.cpp's checks, the server's
    # refusal of an incompatible draft (2025), and the 2026 compatibility line.
    (
        "vocab_mismatch",
        re.compile(
            r"draft model vocab(?: type)? must (?:closely )?match target model"
            r"|draft model (?:bos|eos|special) tokens must match"
            r"|draft vocab (?:special tokens|vocab) must match target vocab"
            r"|the draft model '.*' is not compatible with the target model"
            r"|the target and draft vocabs are not compatible"
        ),
    ),
    # The models do not fit the speculation method, found only by the binary (orch's pre-flight stops the cases
    # GGUF metadata shows, as spec_mismatch): before unknown_flag, as an unknown type is also an argument error.
    (
        "spec_unsupported",
        re.compile(
            r"unknown speculative type"
            r"|requires 'target_layers'"
            r"|layer input tensor is null"
            r"|t_layer_inp"
            r"|draft model is not eagle3"
            r"|target layer id \d+ exceeds target n_layer"
            r"|context type MTP requested but model doesn't contain MTP layers"
            r"|embd row width \d+ does not match the decoder input"
        ),
    ),
    (
        "unknown_flag",
        re.compile(
            r"error while handling argument"
            r"|error: invalid argument"
            r"|error: unknown argument"
        ),
    ),
    (
        "out_of_memory",
        re.compile(
            r"out of memory"
            r"|cudaMalloc failed"
            r"|std::bad_alloc"
            r"|ErrorOutOfDeviceMemory"
            r"|unable to allocate \S+ buffer"
            r"|failed to allocate (?:\S+ )?(?:buffer|compute|graph)"
        ),
    ),
    (
        "model_load",
        re.compile(
            r"failed to load (?:draft )?model"
            r"|error loading model"
            r"|failed to open GGUF file"
            r"|unable to load model"
            r"|failed to create draft context"
            r"|--model-draft is required"
        ),
    ),
    # A request the model cannot take (2025: "the prompt exceeds the context size", later "prompt is too long"):
    # no class of its own, but the line is the reason.
    (
        "other",
        re.compile(
            r"the prompt exceeds the context size"
            r"|prompt is too long"
        ),
    ),
    (
        "spec_not_engaged",
        re.compile(
            r"failed to initialize speculative decoding"
            r"|no implementations specified for speculative decoding"
        ),
    ),
]

# Early 2026 went on by translating tokens between the vocabularies (`... not compatible - tokens will be
# translated between the two`): not a failure by itself.
TRANSLATED = "tokens will be translated between the two"
# Exit statuses a shell reports for a signal (128 + N), for callers that only have the number.
SHELL_SIGNAL_MIN = 129
# What an abort or a crash leaves in a log: where the exit status is unknown (a saved log), the signal's trace.
CRASH_RE = re.compile(
    r"terminate called after throwing|GGML_ASSERT\(|ggml_abort|Segmentation fault"
    r"|Aborted \(core dumped\)|double free or corruption"
)
# Tools whose run ends with the speculative end block; every other CLI tool must print the perf block.
END_BLOCK_TOOLS = ("llama-speculative-simple", "llama-speculative")


@dataclass(frozen=True)
class Ended:
    """How a run's process ended: known at run time, not from a saved log."""

    returncode: int | None  # None when a signal ended it
    signal: int | None
    timed_out: bool = False

    def killed(self) -> bool:
        return self.signal is not None or (
            self.returncode is not None and (self.returncode < 0 or self.returncode >= SHELL_SIGNAL_MIN)
        )


@dataclass(frozen=True)
class Failure:
    """A failure class and what decided it, for the callers that explain it."""

    name: str  # one of FAILURE_CLASSES
    line: str | None = None  # the log line that says it: a known error, an abort
    missing: str | None = None  # truncated_log: what the log lacks


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


def decide_failure(
    text: str, *, expects_speculation: bool, parsed=None, tool: str | None = None, ended: Ended | None = None
) -> Failure | None:
    """The failure of a run whose log (its stderr, or the server's log) is `text`; None for a successful one.

    `parsed` (the run's ParsedLog) and `tool` (the binary's name) let a log cut before its block be told apart
    from a run that never drafted. `ended` None means the exit status is unknown (a saved log): an abort's line
    counts as the signal, and a log without an error line is judged as an exit 0 would be.
    """
    if ended and ended.timed_out:
        return Failure("timeout")
    if found := signature_failure(text):
        return found
    if ended is None:
        if crash := CRASH_RE.search(text):
            return Failure("crash_signal", line=line_at(text, crash.start()))
    elif ended.killed():
        return Failure("crash_signal")
    elif ended.returncode != 0:
        return Failure("other")
    # Before "never drafted": the lost last lines may have held the statistics that show drafting.
    if tool and parsed is not None and (missing := missing_block(parsed, tool)):
        return Failure("truncated_log", missing=missing)
    if expects_speculation and not speculation_ran(text):
        return Failure("spec_not_engaged")
    return None


def classify_failure(
    text: str, *, returncode: int | None, signal: int | None, timed_out: bool, expects_speculation: bool
) -> str | None:
    """One of FAILURE_CLASSES, or None for a successful run, from the log and the exit alone (no block check)."""
    found = decide_failure(text, expects_speculation=expects_speculation, ended=Ended(returncode, signal, timed_out))
    return found.name if found else None


def run_failure(
    parsed,
    stderr: str,
    *,
    tool: str,
    returncode: int | None,
    signal: int | None,
    timed_out: bool,
    expects_speculation: bool,
) -> tuple[str | None, str | None]:
    """(failure class or None, what the log lacks or None) of a finished CLI run, as orch stores it.

    Exit 0 without the block every run of the tool prints is truncated_log: its last lines were lost (llama.cpp's
    log thread, under load), and the statistics line may be among them, so "speculation never engaged" would be a
    guess; an error line in the log still names its own class.
    """
    found = decide_failure(
        stderr,
        expects_speculation=expects_speculation,
        parsed=parsed,
        tool=tool,
        ended=Ended(returncode, signal, timed_out),
    )
    return (found.name, found.missing) if found else (None, None)


def signature_failure(text: str) -> Failure | None:
    """The class a known error line gives the run (failure_signature) and that line."""
    found = failure_signature(text)
    if not found:
        return None
    return Failure(found, line=line_at(text, dict(SIGNATURES)[found].search(text).start()))


def missing_block(parsed, tool: str) -> str | None:
    """What a run of `tool` that exited 0 should have printed and did not (its metrics are then unknown), from its
    ParsedLog."""
    if tool in END_BLOCK_TOOLS:  # every era prints speed and counters together: a log without both was cut
        m = parsed.metrics
        whole = parsed.has_end_block and m["decode_tps"] is not None and m.get("n_drafted") is not None
        if not whole:
            return "the speculative end block (decoded tokens and speed, drafted and accepted counts)"
        # The statistics line (draft calls, drafts made, their cost) and the target's perf block come after the end
        # block: a log cut between them keeps the counters and loses the rest (seen with one core busy beside a run)
        return None if "target" in parsed.perf else "the lines after the end block (statistics, the target's perf)"
    return None if parsed.metrics["decode_tps"] is not None else "the perf block (eval and total time)"


def line_at(text: str, pos: int) -> str:
    """The log line holding position pos, without its timestamp or tag, cut at 200 characters."""
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return strip_prefixes(text[start : end if end >= 0 else len(text)])[0].strip()[:200]


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
