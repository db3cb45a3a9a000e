"""Where a drafting arm's decode time went, and so why it lost: the line under the summary's table.

Pooled over the arm's ok runs, from the build's own figures (store/queries.arm_draft_costs): the end block's tokens
and decode time, the statistics line's draft duration (`dur(b,g,a)`'s g), draft calls and drafts made. Per generated
token the arm spent drafting (draft ms / tokens) plus the rest of its passes (verifying the drafts in one target
batch, sampling, bookkeeping); its speedup is about its reference's ms per token over their sum (the summary's
speedup pairs runs by repeat; this pools them). A draft call that made no draft (`#calls` g minus `#gen drafts`:
shorter than draft_min, or cut to nothing by p_min) ran the draft model for nothing; with a draft model that waste
is named. A verification pass is priced in target steps (its ms without drafting / the reference's ms per token):
about one on a GPU whose target is memory-bound, several on a CPU, where a batch of k tokens costs nearly k steps.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.analyze.costs import StepCost, with_reference


@dataclass(frozen=True)
class TimeSplit:
    arm: str
    reference: str
    ref_ms_per_token: float
    tokens: int  # generated: one per pass plus the accepted draft tokens
    passes: int
    drafted: int
    accepted: int
    decode_ms: float
    draft_ms: float | None  # None where a log printed no draft time
    cost: StepCost  # the same arm's step cost (analyze/costs): v and the break-even come from it
    draft_calls: int | None = None  # None where a log printed no statistics line
    drafts_made: int | None = None
    sampling_ms: float | None = None  # the target's sampling (its perf block), part of the rest

    @property
    def draft_ms_per_drafted(self) -> float | None:
        """The draft's own time per drafted token (the calls that made no draft included: they ran too)."""
        return None if self.draft_ms is None else self.draft_ms / self.drafted

    @property
    def drafting_per_token(self) -> float | None:
        return None if self.draft_ms is None else self.draft_ms / self.tokens

    @property
    def rest_per_token(self) -> float:
        return (self.decode_ms - (self.draft_ms or 0.0)) / self.tokens

    @property
    def pass_steps(self) -> float | None:
        """A pass without its drafting, in target steps (the reference's ms per token): the step cost's v."""
        return self.cost.verify_cost

    @property
    def break_even(self) -> float:
        """The acceptance (accepted / drafted) at which a pass pays for itself here (analyze/costs); above 1, no
        acceptance can."""
        return self.cost.break_even

    @property
    def thrown_away(self) -> int | None:
        if self.draft_calls is None or self.drafts_made is None:
            return None
        return max(self.draft_calls - self.drafts_made, 0)

    def fields(self) -> dict:
        """The summary row's `time_split` (JSON): ms per token by part, passes, draft calls and drafts made."""
        return {
            "reference": self.reference,
            "reference_ms_per_token": self.ref_ms_per_token,
            "drafting_ms_per_token": self.drafting_per_token,
            "rest_ms_per_token": self.rest_per_token,
            "passes": self.passes,
            "tokens_per_pass": self.tokens / self.passes,
            "pass_target_steps": self.pass_steps,
            "draft_calls": self.draft_calls,
            "drafts_made": self.drafts_made,
            "drafts_thrown_away": self.thrown_away,
            "draft_ms_per_drafted_token": self.draft_ms_per_drafted,
            "sampling_ms_per_token": None if self.sampling_ms is None else self.sampling_ms / self.tokens,
            "break_even_acceptance": self.break_even,
        }

    def sentence(self, speedup: float, with_draft_model: bool) -> str:
        """`draft-2 at 0.61x: a token cost 14.8 ms drafting + 42.5 ms verifying and the rest, against 34.8 ms for
        control:...; 75 of 87 draft calls made no draft (...); a pass yielded 2.71 tokens (123 of 144 drafted
        accepted) and cost 3.31 target steps besides drafting`."""
        drafting, rest = self.drafting_per_token, self.rest_per_token
        if self.sampling_ms is not None and self.sampling_ms / self.tokens < rest:
            sampling = self.sampling_ms / self.tokens
            rest_text = f"{rest - sampling:.1f} ms verifying and the rest + {sampling:.1f} ms sampling"
        else:
            rest_text = f"{rest:.1f} ms verifying and the rest"
        parts = (
            f"{drafting:.1f} ms drafting + {rest_text}"
            if drafting is not None
            else f"{rest:.1f} ms (no draft time in its logs)"
        )
        out = (
            f"{self.arm} at {speedup:.2f}x: a token cost {parts}, against {self.ref_ms_per_token:.1f} ms for "
            f"{self.reference}"
        )
        if with_draft_model and self.thrown_away and self.draft_calls:
            out += (
                f"; {self.thrown_away} of {self.draft_calls} draft calls made no draft (shorter than draft_min "
                f"or under p_min: the draft model ran for nothing)"
            )
        if self.pass_steps is not None:
            out += (
                f"; a pass yielded {self.tokens / self.passes:.2f} tokens ({self.accepted} of {self.drafted} "
                f"drafted accepted) and cost {self.pass_steps:.2f} target steps besides drafting"
            )
        even = self.break_even
        # the pre-flight's break-even (models/draft_cost) prices a pass at one target step besides drafting
        assumed = (
            "the pre-flight assumed one target step a pass"
            if self.pass_steps is not None and self.pass_steps > 1.5
            else ""
        )
        if even > 1:  # the break-even is then no acceptance at all, never "break-even at 4939%"
            return out + (f"; no acceptance can pay here ({assumed})" if assumed else "; no acceptance can pay here")
        return out + f"; it breaks even at {even:.0%} acceptance here" + (f" ({assumed})" if assumed else "")


def time_splits(
    cost_rows: list[dict], summary_rows: list[dict], steps: dict[tuple[int, str], StepCost]
) -> dict[tuple[int, str], TimeSplit]:
    """Per (sweep, arm): cost_rows from queries.arm_draft_costs; the summary rows give each arm's reference and
    its mean decode tok/s; steps: costs.step_costs of the same rows (the same arms: both keep those with a
    reference speed and a pass that drafted)."""
    out = {}
    for key, c, ref, ref_tps in with_reference(cost_rows, summary_rows):
        out[key] = TimeSplit(
            arm=key[1],
            reference=ref,
            ref_ms_per_token=1000.0 / ref_tps,
            tokens=int(c["passes"] + c["accepted"]),
            passes=int(c["passes"]),
            drafted=int(c["drafted"]),
            accepted=int(c["accepted"]),
            decode_ms=c["decode_ms"],
            draft_ms=c.get("draft_ms"),
            draft_calls=c.get("draft_calls"),
            drafts_made=c.get("drafts_made"),
            sampling_ms=c.get("sampling_ms"),
            cost=steps[key],
        )
    return out
