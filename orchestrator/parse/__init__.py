"""Pure parsers for llama.cpp output: text in, data out, no I/O.

parsed = parse_run(stdout, stderr)     # a run: figures from stderr, where llama.cpp logs them
parsed = parse_text(stderr)            # any text: stdout, stderr, or both concatenated
parsed.metrics["acceptance"]           # canonical names, see METRIC_KEYS
classify_failure(stderr, returncode=1, signal=None, timed_out=False, expects_speculation=True)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from orchestrator.errors import ParseError

from .acceptance import (
    SeqAcceptance,
    counts_from_rates,
    draft_outcomes,
    rates_per_draft,
    seq_from_counts,
    seq_from_outcomes,
    window_from_log,
)
from .failure import (
    END_BLOCK_TOOLS,
    FAILURE_CLASSES,
    Ended,
    Failure,
    classify_failure,
    decide_failure,
    missing_block,
    run_failure,
)
from .lines import clean_lines
from .perf import PerfBlock, cli_speeds, parse_perf_blocks
from .spec import SpecInfo, parse_spec, primary_stats, split_sections
from .version import parse_version

__all__ = [
    "METRIC_KEYS",
    "FAILURE_CLASSES",
    "END_BLOCK_TOOLS",
    "ParsedLog",
    "parse_text",
    "parse_run",
    "check_ranges",
    "missing_block",
    "classify_failure",
    "run_failure",
    "decide_failure",
    "Ended",
    "Failure",
]

METRIC_KEYS = (
    "n_draft_max",
    "n_predict",
    "n_drafted",
    "n_accepted",
    "acceptance",
    "encode_tps",
    "decode_tps",
    "prompt_eval_ms",
    "prompt_eval_tokens",
    "eval_ms",
    "eval_runs",
    "load_ms",
    "total_ms",
    "mean_accept_len",
    "accept_rate_per_pos",
    "seq_acceptance",
    "seq_acceptance_low",
    "seq_acceptance_high",
    "spec_type",
    "n_generated",
)
# Printed accept% and our n_accept/n_drafted may differ by the printout's rounding (%.3f of a percentage).
ACCEPT_TOLERANCE = 0.0005
# Columns of the metrics table that are INTEGER (32-bit): a count beyond fits no row and is no real count.
INT32_KEYS = ("n_draft_max", "n_predict", "n_drafted", "n_accepted", "prompt_eval_tokens", "eval_runs", "n_generated")
INT32_MAX = 2**31 - 1


@dataclass
class ParsedLog:
    metrics: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)
    version: dict | None = None
    perf: dict[str, PerfBlock] = field(default_factory=dict)  # "target", "draft" (when printed)
    has_end_block: bool = False
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return _json_safe(
            {
                "metrics": self.metrics,
                "extra": self.extra,
                "version": self.version,
                "perf": {k: v.to_dict() for k, v in self.perf.items()},
                "has_end_block": self.has_end_block,
                "warnings": self.warnings,
            }
        )


def parse_text(text: str) -> ParsedLog:
    lines = clean_lines(text)
    spec = parse_spec(lines)
    perf = _perf_by_role(lines)
    target = perf.get("target")
    end = spec.end
    metrics = dict.fromkeys(METRIC_KEYS)
    metrics.update(n_draft_max=end.n_draft, n_predict=end.n_predict, n_drafted=end.n_drafted, n_accepted=end.n_accept)
    if end.n_drafted and end.n_accept is not None:
        metrics["acceptance"] = end.n_accept / end.n_drafted
    if target:
        for key in ("prompt_eval_ms", "prompt_eval_tokens", "eval_ms", "eval_runs", "load_ms", "total_ms"):
            metrics[key] = getattr(target, key)
    # Speeds: the speculative tool's own end block first, then the target perf block, then the chat cli's line.
    chat = cli_speeds(lines)
    metrics["encode_tps"] = _first(end.encode_tps, target and target.prompt_eval_tps, chat and chat[0])
    metrics["decode_tps"] = _first(
        end.decode_tps, _wall_decode_tps(target), target and target.eval_tps, chat and chat[1]
    )
    metrics["n_generated"] = _generated(end, target)
    primary = primary_stats(spec.stats)
    if primary:
        metrics["mean_accept_len"] = primary.mean_accept_len
        metrics["accept_rate_per_pos"] = rates_per_draft(
            primary.accept_rate_per_pos, primary.calls_accept, primary.gen_drafts
        )
        metrics["spec_type"] = primary.impl.replace("_", "-")  # early 2026 printed `ngram_mod`
    extra = _extra(spec, perf)
    window = end.n_draft
    if (metrics["spec_type"] or "").startswith("ngram"):
        # The end block prints the draft model's window (--spec-draft-n-max) whatever drafted: an n-gram method has
        # its own (ngram-mod's n_max, ngram-simple's size_m), so the printed one is no figure of this run.
        metrics["n_draft_max"] = window = None
        extra["n_draft_printed"] = end.n_draft
    if seq := _seq_acceptance(lines, primary, window):
        metrics.update(seq_acceptance=seq.value, seq_acceptance_low=seq.low, seq_acceptance_high=seq.high)
        extra["seq_acceptance_source"] = seq.source
    if chat:
        extra.update(cli_prompt_tps=chat[0], cli_generation_tps=chat[1])
    parsed = ParsedLog(metrics=metrics, extra=extra, version=parse_version(lines), perf=perf, has_end_block=end.found)
    _cross_check(parsed, end.accept_pct)
    return parsed


def parse_run(stdout: str, stderr: str) -> ParsedLog:
    """A CLI run's figures, read from stderr only: llama.cpp logs there, while stdout carries the echoed prompt
    and the generated text, which must never become a number. The chat llama-cli is the one tool that prints
    its speed line on stdout: that line (the last one, printed after the text) is used only when stderr has
    no decode speed."""
    parsed = parse_text(stderr)
    if parsed.metrics["decode_tps"] is None and (chat := cli_speeds(clean_lines(stdout))):
        parsed.metrics["encode_tps"], parsed.metrics["decode_tps"] = chat
        parsed.extra.update(cli_prompt_tps=chat[0], cli_generation_tps=chat[1], speed_from_stdout=True)
    return parsed


def check_ranges(parsed: ParsedLog) -> None:
    """Raise ParseError when a figure cannot be true: a negative count or time, acceptance outside [0, 1],
    more accepted than drafted, or a count beyond what its column holds."""
    m = parsed.metrics
    bad = []
    for key in METRIC_KEYS:
        value = m.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
            bad.append(f"{key} = {value} is negative")
    for key in INT32_KEYS:
        if isinstance(m.get(key), int) and m[key] > INT32_MAX:
            bad.append(f"{key} = {m[key]} is beyond any real count")
    for key in ("acceptance", "seq_acceptance", "seq_acceptance_low", "seq_acceptance_high"):
        if m.get(key) is not None and not 0 <= m[key] <= 1:
            bad.append(f"{key} {m[key]:.1%} is outside 0-100%")
    if bad:
        raise ParseError(f"the log's figures cannot be true: {'; '.join(bad)}")


def _perf_by_role(lines) -> dict[str, PerfBlock]:
    """The first perf block of the `target:` section (or of the whole log without markers) is the target's.

    Early-2026 speculative-simple leaves `draft:` empty and prints the draft context's llama_perf_context_print
    after the target block, when the draft is freed: a second block after `target:` is the draft's.
    """
    sections = split_sections(lines)
    out: dict[str, PerfBlock] = {}
    target_blocks = parse_perf_blocks(sections["target"] if "target" in sections else lines)
    if target_blocks:
        out["target"] = target_blocks[0]
    if "draft" in sections and (blocks := parse_perf_blocks(sections["draft"])):
        out["draft"] = blocks[0]
    elif "draft" in sections and len(target_blocks) > 1:
        out["draft"] = target_blocks[1]
    return out


def _seq_acceptance(lines, primary, requested_window: int | None) -> SeqAcceptance | None:
    """Exact from per-draft lines where the log has them, else from the drafting implementation's counters."""
    if seq := seq_from_outcomes(draft_outcomes(lines)):
        return seq
    rates = primary.accept_rate_per_pos if primary else None
    if rates is None or not primary.calls_accept or any(r is None for r in rates):
        return None  # nothing verified yet, an era without per-position rates, or a rate that is no number
    counts = counts_from_rates(rates, primary.calls_accept)
    return seq_from_counts(primary.gen_drafts, primary.gen_tokens, counts, window_from_log(lines, requested_window))


def _extra(spec: SpecInfo, perf: dict[str, PerfBlock]) -> dict[str, Any]:
    end = spec.end
    extra: dict[str, Any] = {
        k: getattr(end, k)
        for k in ("encode_tokens", "encode_s", "decode_tokens", "decode_s", "accept_pct", "accept_text")
    }
    if target := perf.get("target"):
        extra.update(
            sampling_ms=target.sampling_ms,
            samplers_ms=target.samplers_ms,
            prompt_eval_tps=target.prompt_eval_tps,
            eval_tps=target.eval_tps,
            total_tokens=target.total_tokens,
            unaccounted_ms=target.unaccounted_ms,
            graphs_reused=target.graphs_reused,
            perf_source=target.source,
        )
    if draft := perf.get("draft"):  # the draft context's own decoding: what drafting cost, where no statistics say
        extra.update(draft_eval_ms=draft.eval_ms, draft_eval_runs=draft.eval_runs)
    if spec.stats:
        extra["draft_stats"] = [asdict(s) for s in spec.stats]
    if spec.server:
        extra["server_acceptance"] = [asdict(s) for s in spec.server]
    return extra


def _cross_check(parsed: ParsedLog, accept_pct: float | None) -> None:
    acc = parsed.metrics["acceptance"]
    if acc is not None and accept_pct is not None and abs(acc - accept_pct / 100) > ACCEPT_TOLERANCE:
        parsed.warnings.append(f"printed accept {accept_pct}% disagrees with n_accept/n_drafted = {acc:.5f}")


def _wall_decode_tps(perf: PerfBlock | None) -> float | None:
    """Generated tokens over the generation phase's wall time (total - prompt eval), from a perf block.

    The speculative tools' `decoded ... speed` is wall time of their whole generation loop, sampling included;
    the perf block's `eval time` leaves sampling and other work out (on tiny models about a quarter of the
    time), so a baseline measured by it would look faster than it is next to a speculative arm.
    """
    if not perf or perf.total_ms is None or perf.prompt_eval_ms is None or not perf.eval_runs:
        return None
    decode_ms = perf.total_ms - perf.prompt_eval_ms
    return perf.eval_runs / decode_ms * 1000 if decode_ms > 0 else None


def _generated(end, target: PerfBlock | None) -> int | None:
    """Tokens generated: the speculative tools count them (`decoded N tokens`); elsewhere the perf block's eval
    runs + 1, since the first token is sampled from the prompt's pass and the last is never evaluated
    (llama-completion -n 96: `eval time = ... / 95 runs`)."""
    if end.decode_tokens is not None:
        return end.decode_tokens
    return target.eval_runs + 1 if target and target.eval_runs else None


def _first(*values):
    return next((v for v in values if v is not None), None)


def _json_safe(obj):
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj
