"""Canonical acceptance figures of a speculative run, whichever method drafted:

    mean_accept_len      1 + accepted draft tokens / verification steps (tokens gained per target step)
    accept_rate_per_pos  [i] = share of drafts made that had draft position i accepted (0-based)
    seq_acceptance       drafts accepted in full (every drafted token accepted) / drafts generated
    spec_type            the implementation that drafted, as the statistics line names it (`draft-mtp`, ...)

What llama.cpp counts (common/speculative.cpp at 0c1e57098): `#acc drafts` is the number of drafts with at least
one accepted token, NOT drafts accepted in full; `#acc rate/pos`[i] is accept calls that accepted more than i
tokens / accept calls. A draft is accepted in full when its accepted count equals its own length, so the counters
give sequence acceptance only when every draft had the same length L (`#gen tokens` = `#gen drafts` * L): then
the drafts accepted in full are the accept calls that accepted L tokens. Drafts cut short (near the end of the
generation, by p_min, by the method) leave only bounds, kept in `extra`; the exact figure then needs one line per
draft, speculative-simple's debug line `accepted A/N draft tokens` (-lv 5).
The server's /metrics counters (`llamacpp:spec_decode_*`, cumulative, diffed over a run) hold the same figures;
the per-position series there has one entry per position of the draft window, zeros included.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .lines import Line, to_int

# speculative-simple, LOG_DBG (-lv 5), once per verified draft; a partial acceptance on a target that cannot drop
# part of a sequence restores a checkpoint and replays the accepted tokens, whose own `accepted` line is no draft.
DRAFT_LINE_RE = re.compile(r"^accepted (\d+)/(\d+) draft tokens, the last target token is")
REPLAY_RE = re.compile(r"^partial acceptance: (\d+) < (\d+), restoring checkpoint")
# DFlash/DSpark shrink the requested window to the draft's trained block: the window the drafts really had.
CLAMP_RE = re.compile(r"exceeds the trained block size \d+ -- clamping to (\d+)")
# Rates are printed with 3 decimals: below this many steps rate * steps names one integer count.
EXACT_COUNT_STEPS = 1000
# /metrics counter names (llama-server, PR #26389): totals, and one series per draft position.
DRAFTS = "spec_decode_num_drafts_total"
DRAFT_TOKENS = "spec_decode_num_draft_tokens_total"
ACCEPTED = "spec_decode_num_accepted_tokens_total"
PER_POS_RE = re.compile(r'^spec_decode_num_accepted_tokens_per_pos_total\{position="(\d+)"\}$')


@dataclass
class SeqAcceptance:
    value: float | None  # exact, or None where the counters only bound it
    low: float | None = None
    high: float | None = None
    source: str | None = None  # "draft lines", "counters" (equal-length drafts), "bounds"


def draft_outcomes(lines: list[Line]) -> list[tuple[int, int]]:
    """(accepted, drafted) per verified draft from speculative-simple's debug lines; empty drafts left out."""
    out: list[tuple[int, int]] = []
    replay = False
    for line in lines:
        if m := REPLAY_RE.match(line.text):
            out.append((to_int(m.group(1)), to_int(m.group(2))))
            replay = True
        elif m := DRAFT_LINE_RE.match(line.text):
            if replay:  # the replayed tokens of the draft just counted
                replay = False
                continue
            accepted, drafted = to_int(m.group(1)), to_int(m.group(2))
            if drafted:
                out.append((accepted, drafted))
    return out


def seq_from_outcomes(outcomes: list[tuple[int, int]]) -> SeqAcceptance | None:
    if not outcomes:
        return None
    full = sum(a == n for a, n in outcomes) / len(outcomes)
    return SeqAcceptance(full, full, full, "draft lines")


def seq_from_counts(
    n_drafts: int | None, n_tokens: int | None, at_least: list[float], window: int | None
) -> SeqAcceptance | None:
    """Sequence acceptance from counters: `at_least[i]` = verification steps that accepted more than i tokens.

    Exact when every draft filled the window; otherwise bounded: the full-window drafts accepted in full are
    known, each shorter draft may or may not have been, and there are at most (window * drafts - tokens) of them.
    """
    if not n_drafts or n_tokens is None or not window or n_tokens > n_drafts * window:
        return None
    full_window = at_least[window - 1] if len(at_least) >= window else 0.0
    low = min(full_window / n_drafts, 1.0)
    short = n_drafts * window - n_tokens  # drafts shorter than the window: at most this many
    if short == 0:
        return SeqAcceptance(low, low, low, "counters")
    high = min((full_window + min(short, n_drafts)) / n_drafts, 1.0)
    return SeqAcceptance(None, low, high, "bounds")


def window_from_log(lines: list[Line], requested: int | None) -> int | None:
    """The draft window the drafts had: the clamped block size where the method clamped, else the requested one."""
    for line in lines:
        if m := CLAMP_RE.search(line.text):
            return to_int(m.group(1))
    return requested


def rates_per_draft(rates: list[float] | None, steps: int | None, drafts: int | None) -> list[float] | None:
    """Acceptance by position over the drafts made. The statistics line divides by accept calls, one per target step
    once anything drafted, drafts thrown away included (draft_min, p_min): at the seed's p_min 0.9 on the Qwen pair,
    3 drafts in 79 calls showed 4% at every position for drafts accepted in full. As printed where either count
    is missing."""
    if rates is None or not steps or not drafts or any(r is None for r in rates):
        return rates
    return [c / drafts for c in counts_from_rates(rates, steps)]


def counts_from_rates(rates: list[float], steps: int) -> list[float]:
    """Per-position accept counts back from printed rates (exact integers while rounding cannot blur them)."""
    counts = [r * steps for r in rates]
    return [float(round(c)) for c in counts] if steps < EXACT_COUNT_STEPS else counts


def from_counters(delta: dict[str, float]) -> dict:
    """Canonical figures from a /metrics delta over one run; {} when the build has no such counters or the run
    verified no draft."""
    steps = delta.get(DRAFTS)
    if not steps or steps <= 0:
        return {}
    per_pos = sorted((int(m.group(1)), v) for k, v in delta.items() if (m := PER_POS_RE.match(k)))
    counts = [v for _, v in per_pos]
    out: dict = {"accept_rate_per_pos": [c / steps for c in counts] if counts else None}
    if (accepted := delta.get(ACCEPTED)) is not None:
        out["mean_accept_len"] = 1 + accepted / steps
    # The server sizes its per-position series to the draft window: its length is the window.
    seq = seq_from_counts(int(steps), _int(delta.get(DRAFT_TOKENS)), counts, len(counts) or None)
    if seq:
        out["seq"] = seq
    return out


def _int(value: float | None) -> int | None:
    return None if value is None else int(round(value))


def from_request_lines(requests: list[dict]) -> dict:
    """Canonical figures pooled from llama-server's per-request lines (`draft acceptance = R (A accepted / G
    generated), mean len = M` and the per-position rates, PR #24536's wording or 0c1e57098's trace line), for a
    log without the /metrics counters; {} unless every request's verification steps can be told.

    A request prints shares, not its step count s: s is the one integer that gives its mean length (2 decimals),
    its rates (3 decimals) and, summed over positions, its accepted count A. A request that accepted nothing
    (mean 1.00) leaves s open, and so does a log without mean lengths (2025 wording): then no figure."""
    if not requests or any(
        r.get("mean_len") is None
        or not r.get("rates_per_pos")
        or r.get("accepted") is None
        or r.get("generated") is None
        for r in requests
    ):  # a count too long to be one: None
        return {}
    steps, counts, tokens = 0, [], 0
    for r in requests:
        s = _request_steps(r["accepted"], r["generated"], r["mean_len"], r["rates_per_pos"])
        if s is None:
            return {}
        steps += s
        tokens += r["generated"]
        per_pos = [round(p * s) for p in r["rates_per_pos"]]
        counts = [
            (counts[i] if i < len(counts) else 0) + (per_pos[i] if i < len(per_pos) else 0)
            for i in range(max(len(counts), len(per_pos)))
        ]
    out: dict = {
        "mean_accept_len": 1 + sum(r["accepted"] for r in requests) / steps,
        "accept_rate_per_pos": [c / steps for c in counts],
    }
    if seq := seq_from_counts(steps, tokens, [float(c) for c in counts], len(counts)):
        out["seq"] = seq
    return out


def _request_steps(accepted: int, generated: int, mean_len: float, rates: list[float]) -> int | None:
    if not accepted or mean_len - 1 <= 0 or any(p is None for p in rates):
        return None
    low = accepted / (mean_len - 1 + MEAN_LEN_HALF_STEP)
    high = accepted / (mean_len - 1 - MEAN_LEN_HALF_STEP) if mean_len - 1 > MEAN_LEN_HALF_STEP else generated
    found = [
        s
        for s in range(max(1, int(low)), min(generated, int(high) + 1) + 1)
        if abs(accepted / s - (mean_len - 1)) <= MEAN_LEN_HALF_STEP + 1e-9
        and all(abs(p * s - round(p * s)) <= RATE_HALF_STEP * s + 1e-9 for p in rates)
        and sum(round(p * s) for p in rates) == accepted
    ]
    return found[0] if len(found) == 1 else None


MEAN_LEN_HALF_STEP = 0.005  # mean len is printed with 2 decimals
RATE_HALF_STEP = 0.0005  # rates with 3
