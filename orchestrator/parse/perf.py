"""Perf printouts of every era, as one PerfBlock per context.

    2023 -> 2024-09   llama_print_timings:        load time = ...          (one function for everything)
    2024-09 -> 2025-11 llama_perf_sampler_print:    sampling time = ... / N runs (...)
                       llama_perf_context_print:        load time = ...     (prompt eval, eval, total, graphs reused)
    2025-11 -> now     common_perf_print: sampling / samplers / load / prompt eval / eval / total / unaccounted / graphs reused
                       (library llama_perf_context_print still prints for draft contexts, hidden unless -lv 4 since 2026-05)
The numbers have kept one format throughout, so one table of field patterns serves every era.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

from .lines import Line, to_float, to_int

PERF_FUNC_RE = re.compile(
    r"^(llama_print_timings|llama_perf_context_print|llama_perf_sampler_print|common_perf_print):\s+(.*)$"
)
NUM = r"(-?nan|-?inf|[\d.]+)"
RATE = rf"\(\s*{NUM} ms per token,\s+{NUM} tokens per second\)"

# (pattern on the text after the function name, PerfBlock attribute per group; None skips a group)
FIELD_PATTERNS: list[tuple[re.Pattern, tuple[str, ...]]] = [
    (re.compile(r"^load time =\s+([\d.]+) ms"), ("load_ms",)),
    (
        re.compile(rf"^prompt eval time =\s+([\d.]+) ms /\s+(\d+) tokens\s+{RATE}"),
        ("prompt_eval_ms", "prompt_eval_tokens", None, "prompt_eval_tps"),
    ),
    (
        re.compile(rf"^eval time =\s+([\d.]+) ms /\s+(\d+) (?:runs|tokens)\s+{RATE}"),
        ("eval_ms", "eval_runs", None, "eval_tps"),
    ),
    (re.compile(r"^total time =\s+([\d.]+) ms(?: /\s+(\d+) tokens)?"), ("total_ms", "total_tokens")),
    # `sample time` (2023) and `sampling time` (sampler print 2024, common_perf_print 2025+: no count).
    (re.compile(r"^sampl(?:e|ing) time =\s+([\d.]+) ms(?: /\s+(\d+) runs)?"), ("sampling_ms", "sampling_runs")),
    (re.compile(r"^samplers time =\s+([\d.]+) ms(?: /\s+(\d+) (?:tokens|runs))?"), ("samplers_ms", "samplers_tokens")),
    (re.compile(r"^unaccounted time =\s+([\d.]+) ms"), ("unaccounted_ms",)),
    (re.compile(r"^graphs reused =\s+(\d+)"), ("graphs_reused",)),
]
# The chat llama-cli (Dec 2025 ->) prints no perf block, only `[ Prompt: 8353.0 t/s | Generation: 705.6 t/s ]`.
CLI_SPEED_RE = re.compile(rf"^\[ Prompt: {NUM} t/s \| Generation: {NUM} t/s \]$")
INT_FIELDS = {"prompt_eval_tokens", "eval_runs", "total_tokens", "sampling_runs", "samplers_tokens", "graphs_reused"}


@dataclass
class PerfBlock:
    source: str | None = None  # the printing function of the block's first line
    load_ms: float | None = None
    prompt_eval_ms: float | None = None
    prompt_eval_tokens: int | None = None
    prompt_eval_tps: float | None = None
    eval_ms: float | None = None
    eval_runs: int | None = None
    eval_tps: float | None = None
    total_ms: float | None = None
    total_tokens: int | None = None
    sampling_ms: float | None = None
    sampling_runs: int | None = None
    samplers_ms: float | None = None
    samplers_tokens: int | None = None
    unaccounted_ms: float | None = None
    graphs_reused: int | None = None

    def is_set(self, name: str) -> bool:
        return getattr(self, name) is not None

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _parse_perf_line(text: str) -> tuple[str, dict] | None:
    m = PERF_FUNC_RE.match(text)
    if not m:
        return None
    func, rest = m.group(1), m.group(2)
    for pattern, names in FIELD_PATTERNS:
        if fm := pattern.match(rest):
            values = {}
            for name, raw in zip(names, fm.groups()):
                if name is None or raw is None:
                    continue
                values[name] = to_int(raw) if name in INT_FIELDS else to_float(raw)
            return func, values
    return None


def parse_perf_blocks(lines: list[Line]) -> list[PerfBlock]:
    """Perf lines grouped into blocks; a field seen twice (a second context's printout) starts a new block.

    A blank or unrelated line does not end a block: the 2024 sampler and context printouts of one run are
    separate functions, and the target section mixes them with memory-breakdown lines.
    """
    blocks: list[PerfBlock] = []
    current: PerfBlock | None = None
    for line in lines:
        parsed = _parse_perf_line(line.text)
        if parsed is None:
            continue
        func, values = parsed
        if current is None or any(current.is_set(k) for k in values):
            current = PerfBlock(source=func)
            blocks.append(current)
        for k, v in values.items():
            setattr(current, k, v)
    return blocks


def cli_speeds(lines: list[Line]) -> tuple[float | None, float | None] | None:
    """(prompt t/s, generation t/s) of the chat llama-cli's last turn, or None."""
    found = None
    for line in lines:
        if m := CLI_SPEED_RE.match(line.text.strip()):
            found = (to_float(m.group(1)), to_float(m.group(2)))
    return found
