"""Can a draft model pay, before anything runs? What each decode step reads from memory (gguf_info.decode_bytes)
bounds what drafting a token costs against what verifying costs.

A pass drafts g tokens and verifies them in one target step (on a GPU whose target is memory-bound; more on a CPU).
With c the draft's cost per drafted token in target steps and a the share of drafted tokens accepted, a pass yields
1 + g a tokens for g c + 1 steps: it gains only while a > c (analyze/costs: break-even a* = c at v = 1). Where both
decode steps are memory-bound, c is the draft's decode bytes over the target's, a lower bound of what the draft
costs. So a draft that reads as much as its target (a layer-cut Gemma 3 270M: the 170 MiB tied embedding is most of
both) needs acceptance above that ratio to break even, and at 100% or more no acceptance can pay.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.models.gguf_info import ModelInfo


@dataclass(frozen=True)
class DraftCost:
    draft_bytes: int
    target_bytes: int

    @property
    def ratio(self) -> float:
        """c: the draft's bytes per decode step over the target's."""
        return self.draft_bytes / self.target_bytes

    @property
    def break_even(self) -> float:
        """The acceptance (accepted / drafted) a pass must beat where verifying costs one target step."""
        return self.ratio

    @property
    def can_pay(self) -> bool:
        return self.ratio < 1

    def note(self) -> str:
        """One line for the arm's notes (dry run, stored with the run)."""
        return (
            f"draft reads {self.ratio:.0%} of the target's bytes per token ({self.draft_bytes / 2**20:.0f} of "
            f"{self.target_bytes / 2**20:.0f} MiB): it breaks even only above {self.break_even:.0%} acceptance, "
            f"where verifying costs one target step (more on a CPU)"
        )

    def warning(self) -> str | None:
        """A line before launch where no acceptance can pay; None where some can."""
        if self.can_pay:
            return None
        return (
            f"draft reads {self.ratio:.0%} of the target's bytes per token, so no acceptance can pay: drafting a "
            f"token costs at least a target step; use a smaller draft (a shared embedding counts in both)"
        )


def draft_cost(target: ModelInfo | None, draft: ModelInfo | None) -> DraftCost | None:
    """The bound for a target and its draft model; None without both, or without their decode bytes."""
    if not target or not draft or not target.decode_bytes or not draft.decode_bytes:
        return None
    return DraftCost(draft.decode_bytes, target.decode_bytes)
