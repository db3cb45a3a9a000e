"""Like for like: when a CLI recipe's baseline and a speculative arm run different programs (llama-completion
against llama-speculative-simple), every speedup would include the difference between the two programs' loops.
So the plan gets a control arm per such program and argv: the arm's own program and flags, its draft model and
draft settings removed, and an n-gram speculation that cannot draft (lookups of CONTROL_NGRAM_MATCH tokens, which
no generation of ordinary length repeats). It runs the same speculative loop, drafting nothing, at the cost of a hash lookup per
token. Each speculative arm's speedup is then against its control (the same program with and without speculation),
and the control's own speedup against the baseline is the program difference, shown as such.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from orchestrator.recipe import argv as flags
from orchestrator.recipe.plan import Arm

CONTROL_NGRAM_MATCH = 1024  # the longest lookup llama.cpp takes ("between 1 and 1024"): it never matches
# Flags that belong to speculation: dropped from the arm's argv, with their value.
SPECULATION_FLAGS = set(
    flags.DRAFT_MODEL
    + flags.DRAFT_MAX
    + flags.DRAFT_MIN
    + flags.DRAFT_P_MIN
    + flags.DRAFT_P_SPLIT
    + flags.GPU_LAYERS_DRAFT
    + flags.CACHE_TYPE_K_DRAFT
    + flags.CACHE_TYPE_V_DRAFT
    + flags.DEVICE_DRAFT
    + flags.CTX_DRAFT
    + flags.SPEC_TYPE
)
SPECULATION_PREFIXES = ("--spec-ngram-", "--spec-draft-")


def speculates(argv: list[str]) -> bool:
    """The argv asks for speculation: a draft model, or a spec type other than none."""
    spec_type = flags.flag_value(argv, flags.SPEC_TYPE)
    return bool(flags.flag_value(argv, flags.DRAFT_MODEL)) or bool(spec_type and spec_type != "none")


def control_argv(argv: list[str], literal: list[bool]) -> tuple[list[str], list[bool]]:
    """argv without its speculation flags (and their values), plus an n-gram speculation that cannot draft."""
    out, lit, skip = [], [], False
    for arg, is_literal in zip(argv, literal):
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if is_literal and (name in SPECULATION_FLAGS or name.startswith(SPECULATION_PREFIXES)):
            skip = "=" not in arg  # `--flag value`: the value goes too
            continue
        out.append(arg)
        lit.append(is_literal)
    extra = ["--spec-type", "ngram-mod", "--spec-ngram-mod-n-match", str(CONTROL_NGRAM_MATCH)]
    return out + extra, lit + [True] * len(extra)


def with_controls(arms: list[Arm]) -> list[Arm]:
    """Copies of the arms, each with its `reference` (the arm its speedup is measured against), plus one control
    arm per distinct control argv of speculative arms whose program is not the baseline's."""
    base = next((a for a in arms if a.is_baseline), None)
    if base is None:
        return list(arms)
    program = Path(base.argv[0]).name
    controls: dict[tuple, Arm] = {}
    out = []
    for arm in arms:
        if arm.is_baseline or not speculates(arm.argv) or Path(arm.argv[0]).name == program:
            out.append(replace(arm, reference=None if arm.is_baseline else base.name))
            continue
        argv, literal = control_argv(arm.argv, arm.literal)
        if tuple(argv) not in controls:
            name = _control_name(Path(arm.argv[0]).name, argv, {c.name: c.argv for c in controls.values()})
            controls[tuple(argv)] = Arm(
                name=name,
                params={**base.params, "control_of": Path(arm.argv[0]).name},
                argv=argv,
                literal=literal,
                is_baseline=False,
                is_control=True,
                reference=base.name,
            )
        out.append(replace(arm, reference=controls[tuple(argv)].name))
    return [*out, *controls.values()]


def _control_name(program: str, argv: list[str], taken: dict[str, list[str]]) -> str:
    """`control:PROGRAM`; a second control of that program is named after what its argv changes from the first's
    (`control@tiny-qwen35-mtp` for an MTP arm's own target file, `control@c=32768` for another context), so a
    reader sees which control an arm is measured against, in a name short enough for the table; a number where
    that says nothing new."""
    name = f"control:{program}"
    if name not in taken:
        return name
    changed = _changes(taken[name], argv)
    if changed and (named := f"control@{changed}") not in taken:
        return named
    return f"{name}#{len(taken) + 1}"


def _changes(first: list[str], argv: list[str], most: int = 2) -> str | None:
    """The flags whose values argv changes from first, as `file-stem` for the target model and `flag=value`
    otherwise; None when none or more than `most` differ."""
    parts = []
    for flag in dict.fromkeys(a.split("=", 1)[0] for a in argv[1:] if a.startswith("-")):
        mine, theirs = flags.flag_value(argv, (flag,)), flags.flag_value(first, (flag,))
        if mine != theirs:
            parts.append(Path(mine).stem if flag in flags.TARGET_MODEL and mine else f"{flag.lstrip('-')}={mine}")
    return ",".join(parts) if 0 < len(parts) <= most else None
