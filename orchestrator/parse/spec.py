"""Speculative decoding printouts: the end-of-run block, per-implementation statistics, server acceptance lines.

The end block of llama-speculative(-simple) has kept the same text since 2023:
    encoded   12 tokens in    0.015 seconds, speed:  827.529 t/s
    decoded   81 tokens in    0.408 seconds, speed:  198.344 t/s
    n_draft   = 16 / n_predict = 81 / n_drafted = 69 / n_accept  = 45 / accept    = 65.217%
then `draft:` (draft perf or statistics) and `target:` (target perf). `accept` is `-nan%` when nothing was drafted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .lines import Line, to_float, to_int

NUM = r"(-?nan|-?inf|[\d.]+)"
# `generated` is the 2023 proof-of-concept wording of `decoded`.
SPEED_RE = re.compile(rf"^(encoded|decoded|generated)\s+(\d+) tokens in\s+([\d.]+) seconds, speed:\s+{NUM} t/s$")
COUNTER_RE = re.compile(r"^(n_draft|n_predict|n_drafted|n_accept)\s+= (-?\d+)$")
ACCEPT_RE = re.compile(rf"^accept\s+= {NUM}%$")
SECTION_RE = re.compile(r"^(draft|target):$")

# Statistics line, matched field by field: the first 2026 form was `#calls = N`; f49e917 (early 2026, server
# only) already prints `#calls(b,g,a) = B G A` with underscore type names (`ngram_mod`); 0c1e57098 pads the
# numbers and hyphenates names. Mean length and per-position rates appear once something was accepted.
STATS_RE = re.compile(r"^statistics\s+([\w-]+):\s+#")
CALLS3_RE = re.compile(r"#calls\(b,g,a\) =\s*(\d+)\s+(\d+)\s+(\d+)")
CALLS1_RE = re.compile(r"#calls =\s*(\d+)")
COUNT_FIELDS = {
    "gen_drafts": "#gen drafts",
    "acc_drafts": "#acc drafts",
    "gen_tokens": "#gen tokens",
    "acc_tokens": "#acc tokens",
}
MEAN_LEN_RE = re.compile(rf"#mean acc len =\s*{NUM}")
RATES_RE = re.compile(r"#acc rate/pos = \(([^)]*)\)")
DUR_RE = re.compile(r"dur\(b,g,a\) = ([\d.]+), ([\d.]+), ([\d.]+) ms")

# llama-server per request: `draft acceptance rate = 0.64 (167 accepted / 259 generated)` (2025), then with
# `, mean len = 2.92` (0c1e57098, the per-position rates on a trace line of their own: `acc per pos = (...)`) or,
# in PR #24536's wording, `, mean acceptance length = 2.92, acceptance rate per position = (0.805, 0.632)`.
SERVER_ACC_RE = re.compile(
    rf"draft acceptance(?: rate)? = {NUM} \(\s*(\d+) accepted /\s*(\d+) generated\)"
    r"(?:, mean (?:len|acceptance length) =\s*([\d.]+))?(?:, acceptance rate per position = \(([^)]*)\))?"
)
SERVER_PER_POS_RE = re.compile(r"^\s*acc per pos = \(([^)]*)\)")


@dataclass
class EndBlock:
    n_draft: int | None = None
    n_predict: int | None = None
    n_drafted: int | None = None
    n_accept: int | None = None
    accept_pct: float | None = None  # as printed; None for nan
    accept_text: str | None = None  # raw token, e.g. "65.217" or "-nan"
    encode_tokens: int | None = None
    encode_s: float | None = None
    encode_tps: float | None = None
    decode_tokens: int | None = None
    decode_s: float | None = None
    decode_tps: float | None = None

    @property
    def found(self) -> bool:
        return self.n_drafted is not None or self.decode_tokens is not None


@dataclass
class DraftStats:
    impl: str  # e.g. "draft-simple", "ngram-mod"; older builds print "draft", "ngram_mod"
    calls_begin: int | None = None
    calls_gen: int | None = None
    calls_accept: int | None = None
    calls: int | None = None  # the older single `#calls =` counter
    gen_drafts: int | None = None
    acc_drafts: int | None = None
    gen_tokens: int | None = None
    acc_tokens: int | None = None
    mean_accept_len: float | None = None
    accept_rate_per_pos: list[float] | None = None
    dur_ms: list[float] | None = None  # begin, generate, accept


@dataclass
class ServerAcceptance:
    rate: float | None
    accepted: int
    generated: int
    mean_len: float | None = None
    rates_per_pos: list[float] | None = None  # over this request's verification steps


@dataclass
class SpecInfo:
    end: EndBlock = field(default_factory=EndBlock)
    stats: list[DraftStats] = field(default_factory=list)
    server: list[ServerAcceptance] = field(default_factory=list)


def parse_end_block(lines: list[Line]) -> EndBlock:
    """The last occurrence of each end-block line wins (a log holds one run's block)."""
    end = EndBlock()
    for line in lines:
        t = line.text
        if m := SPEED_RE.match(t):
            kind = "encode" if m.group(1) == "encoded" else "decode"
            setattr(end, f"{kind}_tokens", to_int(m.group(2)))
            setattr(end, f"{kind}_s", to_float(m.group(3)))
            setattr(end, f"{kind}_tps", to_float(m.group(4)))
        elif m := COUNTER_RE.match(t):
            setattr(end, m.group(1), to_int(m.group(2)))
        elif m := ACCEPT_RE.match(t):
            end.accept_text = m.group(1)
            end.accept_pct = to_float(m.group(1))
    return end


def parse_stats_line(text: str) -> DraftStats | None:
    m = STATS_RE.match(text)
    if not m:
        return None
    st = DraftStats(impl=m.group(1))
    if c := CALLS3_RE.search(text):
        st.calls_begin, st.calls_gen, st.calls_accept = (to_int(x) for x in c.groups())
    elif c := CALLS1_RE.search(text):
        st.calls = to_int(c.group(1))
    for attr, label in COUNT_FIELDS.items():
        if c := re.search(re.escape(label) + r" =\s*(\d+)", text):
            setattr(st, attr, to_int(c.group(1)))
    if c := MEAN_LEN_RE.search(text):
        st.mean_accept_len = to_float(c.group(1))
    if c := RATES_RE.search(text):
        st.accept_rate_per_pos = _rates(c.group(1))
    if c := DUR_RE.search(text):
        st.dur_ms = [to_float(x) for x in c.groups()]
    return st


def parse_spec(lines: list[Line]) -> SpecInfo:
    info = SpecInfo(end=parse_end_block(lines))
    seen: dict[str, int] = {}
    for line in lines:
        if st := parse_stats_line(line.text):
            # Counters are cumulative, so a repeated line for one implementation replaces the earlier one.
            if st.impl in seen:
                info.stats[seen[st.impl]] = st
            else:
                seen[st.impl] = len(info.stats)
                info.stats.append(st)
        elif m := SERVER_ACC_RE.search(line.text):
            info.server.append(
                ServerAcceptance(
                    to_float(m.group(1)),
                    to_int(m.group(2)),
                    to_int(m.group(3)),
                    to_float(m.group(4)),
                    _rates(m.group(5)),
                )
            )
        elif (m := SERVER_PER_POS_RE.match(line.text)) and info.server and info.server[-1].rates_per_pos is None:
            info.server[-1].rates_per_pos = _rates(m.group(1))  # the trace line right after its request's
    return info


def _rates(text: str | None) -> list[float] | None:
    return None if text is None else [to_float(x) for x in text.split(",") if x.strip()]


def primary_stats(stats: list[DraftStats]) -> DraftStats | None:
    """The implementation that did the drafting (most generated tokens; the first on a tie)."""
    if not stats:
        return None
    return max(stats, key=lambda s: s.gen_tokens or 0)


def split_sections(lines: list[Line]) -> dict[str, list[Line]]:
    """Split at the `draft:` / `target:` markers: {"head": ..., "draft": ..., "target": ...} (present keys only)."""
    sections: dict[str, list[Line]] = {"head": []}
    current = "head"
    for line in lines:
        if m := SECTION_RE.match(line.text):
            current = m.group(1)
            sections[current] = []
            continue
        sections[current].append(line)
    return sections
