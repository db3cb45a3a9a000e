"""Like for like in tokens: a CLI arm's reference decodes the number of tokens the arm decoded.

llama-speculative-simple can pass -n by a whole draft: at 0c1e57098 common_speculative_draft truncates a draft to the
remaining budget only while that budget is positive, so the last pass verifies an untruncated draft (an 8-token
n-gram window decoded 73 tokens at -n 64, a 64-token one 161 at -n 96). Its speed then covers more text, often the
easy part of a loop, than its control's. So when an arm's run decoded another count than its reference (its control,
or the baseline) decodes at the recipe's -n, the reference runs once more right after it, on the same repeat, with
the -n that decodes that count: llama-completion decodes -n tokens, llama-speculative-simple drafting nothing -n + 1.

That run is stored as the arm `control~ARM` (`baseline~ARM`; params: its n_predict and `length_of`; a control: it drafts nothing),
and the arm's run names it as its reference, so the paired speedup, its interval and output parity compare the same
tokens. Where the counts
already agree, nothing runs. Only the speedup against the reference is matched; the one against the baseline (shown
apart, beside a control) is not.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from orchestrator.parse import END_BLOCK_TOOLS
from orchestrator.recipe import argv as flags
from orchestrator.run.one_run import RunRecord
from orchestrator.run.prepare import PreparedArm

SEPARATOR = "~"


def label(reference: str, arm: str) -> str:
    """`control~ngram-mod`: the reference (a control by its kind, `control:PROGRAM` being long) at ngram-mod's count."""
    return f"{reference.split(':', 1)[0]}{SEPARATOR}{arm}"


def matched_reference(record: RunRecord, arm: PreparedArm, by_name: dict[str, PreparedArm]) -> PreparedArm | None:
    """The reference of `arm`, set to decode what this ok run decoded; None where it already does, or where the
    counts cannot be matched (no count, a reference that did not launch or prints no count we can set)."""
    reference = by_name.get(arm.arm.reference or "")
    generated = record.parsed.metrics.get("n_generated") if record.parsed else None
    if arm.arm.is_baseline or arm.arm.is_control:
        return None  # a control's difference from the baseline is the programs' (one token: -n against -n + 1)
    if record.status != "ok" or not generated or reference is None or reference.stop_reason:
        return None
    if Path(arm.executed[0]).name not in END_BLOCK_TOOLS:
        return None  # the programs that can pass -n
    asked = flags.flag_value(reference.executed, flags.N_PREDICT)
    tool = Path(reference.executed[0]).name
    extra = {"llama-completion": 0, **dict.fromkeys(END_BLOCK_TOOLS, 1)}.get(tool)
    if asked is None or extra is None or not asked.lstrip("-").isdigit():
        return None
    n_predict = generated - extra
    if int(asked) == n_predict or n_predict < 1:
        return None

    def at_length(argv: list[str]) -> list[str]:
        return flags.with_values(argv, flags.N_PREDICT, lambda _: str(n_predict))

    matched = replace(
        reference.arm,
        name=label(reference.arm.name, arm.arm.name),
        argv=at_length(reference.arm.argv),
        params={**reference.arm.params, "n_predict": n_predict, "length_of": arm.arm.name},
        is_baseline=False,
        is_control=True,
    )
    return replace(reference, arm=matched, executed=at_length(reference.executed))
