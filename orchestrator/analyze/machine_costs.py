"""What a machine charges for speculative decoding, as a llama-bench probe measured it (run/probe.py): the time of
one target pass of b tokens (verifying b - 1 drafted tokens) and of one drafted token, each in milliseconds and in
target steps (a pass of one token). A property of build x host x model x threads x offload x context depth, not of
the prompt: kept in results.duckdb (cost_probes) and reused until one of those changes. Pure: built from rows.
The same is probed for a draft model: its pass of b tokens (llama-speculative-simple feeds the draft the batch the
target verified) and its step, which is what drafting one token costs before sampling.

On a CPU a pass of b tokens costs nearly b steps (compute-bound: on 2 cores the Qwen2.5-Coder 1.5B paid 2.7 steps
for 4 tokens); on a GPU whose target is memory-bound it costs about one step up to b of 8-16, which is where a
draft pays. llama-bench times the batch alone: what the speculative loop adds a pass (the draft re-reading the
accepted tokens, sampling, bookkeeping) is not in it.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class ProbeKey:
    """What a probe's figures depend on; a stored probe is current only for the same key."""

    build_id: str
    host_id: str
    model_sha256: str
    n_threads: int | None  # as the recipe gave it; None: the program's default
    n_gpu_layers: int | None  # as the recipe gave it; None: the program's default
    n_depth: int  # tokens of context already filled when a pass is timed


@dataclass(frozen=True)
class Timing:
    """One timed batch: its size and each repetition's milliseconds (of a pass; of a token for a decode)."""

    batch: int
    samples_ms: tuple[float, ...]

    @property
    def ms(self) -> float:
        return statistics.fmean(self.samples_ms)

    @property
    def sd_ms(self) -> float | None:
        return statistics.stdev(self.samples_ms) if len(self.samples_ms) > 1 else None

    @property
    def relative_error(self) -> float:
        """The standard error of the mean over the mean (0 below 2 repetitions: nothing says more)."""
        sd = self.sd_ms
        return 0.0 if sd is None or not self.ms else sd / math.sqrt(len(self.samples_ms)) / self.ms


@dataclass(frozen=True)
class PassCosts:
    """C(b): a model's pass of b tokens, probed for b = 1 .. the largest window + 1."""

    key: ProbeKey
    model_name: str
    passes: dict[int, Timing]  # b -> the pass's timing
    reused: bool = False  # found stored (True) or probed now

    @property
    def step_ms(self) -> float:
        """One step: a pass of one token."""
        return self.passes[1].ms

    def ms(self, batch: int) -> float:
        """A pass of `batch` tokens in ms; between probed sizes linear in b, beyond the largest in proportion."""
        if batch in self.passes:
            return self.passes[batch].ms
        sizes = sorted(self.passes)
        below = max((b for b in sizes if b < batch), default=sizes[0])
        above = min((b for b in sizes if b > batch), default=sizes[-1])
        if below == above:
            return self.passes[below].ms * batch / below
        share = (batch - below) / (above - below)
        return self.passes[below].ms * (1 - share) + self.passes[above].ms * share

    def steps(self, batch: int) -> float:
        """C(b) in steps of this model."""
        return self.ms(batch) / self.step_ms

    def missing(self, batches: range | list[int]) -> list[int]:
        return [b for b in batches if b not in self.passes]


def pass_costs(rows: list[dict], key: ProbeKey, *, reused: bool) -> PassCosts | None:
    """PassCosts from store/probes rows (one per batch size); None without a pass of one token."""
    passes = {r["batch"]: Timing(r["batch"], tuple(r["samples_ms"])) for r in rows}
    if 1 not in passes:
        return None
    return PassCosts(key, rows[0].get("model_name") or key.model_sha256[:12], passes, reused)
