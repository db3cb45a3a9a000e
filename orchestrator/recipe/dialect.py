"""What a build accepts, read from its captured `--help`, and how a recipe's flags become that build's flags.

Recipes are written once; builds differ (`--draft-max` became `--spec-draft-n-max`, a draft model needs
`--spec-type draft-simple` since mid-2026, statistics need `-lv 4` since the May 2026 log reduction,
`llama-cli` split into `llama-completion`). Every change made here is returned as a sentence, stored
with the run; a flag the build cannot take stops the arm before launch.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.errors import DialectError
from orchestrator.recipe import argv as flags

CLASSIC_COMPLETION = ("llama-completion", "llama-cli")  # preferred first: llama-cli became a chat UI in Dec 2025
NO_SPEC_TYPE_TOOLS = {"llama-speculative"}  # the tree variant drafts without --spec-type
NUMBER = re.compile(r"^-\d")


@dataclass
class HelpInfo:
    """One binary's flags: every spelling it lists, minus those it lists as removed."""

    accepted: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)
    spec_types: list[str] = field(default_factory=list)
    has_trace_level: bool = False  # `-lv` documents level 4 (trace): stats and perf lines hide below it
    switches: set[str] = field(default_factory=set)  # listed with no value: `-fa, --flash-attn` before Sept 2025


def parse_help(text: str) -> HelpInfo:
    info = HelpInfo()
    entries: list[tuple[list[str], str, str]] = []  # (names, metavar column, description)
    for line in text.splitlines():
        if line.startswith("-") or re.match(r" {1,2}-", line):  # llama-bench indents its options by two
            # Columns are separated by 2+ spaces; the flag column may itself be split ("-lv,   --verbosity").
            chunks = re.split(r"\s{2,}", line.strip())
            n_flag = next((i for i, c in enumerate(chunks) if i and not c.startswith("-")), len(chunks))
            left, right = " ".join(chunks[:n_flag]), " ".join(chunks[n_flag:])
            names = [item.split()[0] for item in left.split(",") if item.strip().startswith("-")]
            entries.append((names, left, right))
        elif entries and line.startswith(" "):
            names, left, desc = entries[-1]
            entries[-1] = (names, left, f"{desc} {line.strip()}")
    for names, left, desc in entries:
        target = info.removed if "has been removed" in desc else info.accepted
        target.update(names)
        if all(len(item.split()) == 1 for item in left.split(",") if item.strip()):
            info.switches.update(names)
        if "--spec-type" in names:
            values = left.split("--spec-type", 1)[1]
            info.spec_types = [v for v in re.split(r"[\s,|\[\]]+", values) if v and not v.startswith("-")]
        if "-lv" in names or "--verbosity" in names:
            info.has_trace_level = "4: trace" in desc or "- 4: trace" in desc
    return info


@dataclass
class Translation:
    argv: list[str]
    notes: list[str]


def translate(
    argv: list[str],
    literal: list[bool],
    helps: dict[str, str],
    build_label: str,
    *,
    enabled: bool = True,
    bin_dir: str | None = None,
) -> Translation:
    """The argv this build should run for a recipe's argv; raises DialectError for flags it lacks."""
    tool = Path(argv[0]).name
    in_build = bin_dir is not None and Path(argv[0]).parent == Path(bin_dir)
    if in_build and tool not in helps and tool not in CLASSIC_COMPLETION:
        raise DialectError(f"build {build_label} has no {tool}; it has {', '.join(sorted(helps))}")
    if not enabled or tool not in helps and tool not in CLASSIC_COMPLETION:
        return Translation(list(argv), [] if enabled else ["dialect translation disabled"])
    notes: list[str] = []
    out = list(argv)
    if tool in CLASSIC_COMPLETION:
        chosen = next((t for t in CLASSIC_COMPLETION if t in helps), tool)
        if chosen != tool:
            out[0] = str(Path(argv[0]).with_name(chosen))
            notes.append(f"{tool} -> {chosen} (the classic completion tool of build {build_label})")
            tool = chosen
    if tool not in helps:
        raise DialectError(f"build {build_label} has no {tool}; it has {', '.join(sorted(helps))}")
    info = parse_help(helps[tool])
    _check_spec_types(out, info, tool, build_label)  # before renaming: a missing method is the reason to give
    for i in range(1, len(out)):
        if literal[i] and out[i].startswith("-") and not NUMBER.match(out[i]):
            out[i] = _translate_flag(out[i], info, tool, build_label, notes)
    out, literal = _switch_values(out, list(literal), info, tool, build_label, notes)
    present = {a.split("=", 1)[0] for a, lit in zip(out, literal) if lit}
    if (
        present & set(flags.DRAFT_MODEL)
        and "--spec-type" not in present
        and tool not in NO_SPEC_TYPE_TOOLS
        and "draft-simple" in info.spec_types
    ):
        out += ["--spec-type", "draft-simple"]
        notes.append(f"added --spec-type draft-simple: {tool} of build {build_label} ignores a draft model without it")
    if info.has_trace_level and not present & set(flags.VERBOSITY) and "-lv" in info.accepted:
        out += ["-lv", "4"]
        notes.append(f"added -lv 4: {tool} of build {build_label} hides statistics and library perf lines below it")
    return Translation(out, notes)


def _switch_values(
    argv: list[str], literal: list[bool], info: HelpInfo, tool: str, build_label: str, notes: list[str]
) -> tuple[list[str], list[bool]]:
    """`-fa on|off|auto` for a build whose `-fa` is a bare switch (before Sept 2025): `on` is the switch alone,
    `off` and `auto` are its absence (that era's default: disabled)."""
    out, kept = [argv[0]], [literal[0]]
    i = 1
    while i < len(argv):
        arg, value = argv[i], argv[i + 1] if i + 1 < len(argv) else None
        if literal[i] and arg in flags.FLASH_ATTN and arg in info.switches and value in ("on", "off", "auto"):
            if value == "on":
                out.append(arg)
                kept.append(True)
            notes.append(
                f"{arg} {value} -> {arg if value == 'on' else '(nothing)'} ({tool} of build {build_label} "
                f"takes {arg} as a switch, off by default)"
            )
            i += 2
            continue
        out.append(arg)
        kept.append(literal[i])
        i += 1
    return out, kept


def _check_spec_types(argv: list[str], info: HelpInfo, tool: str, build_label: str) -> None:
    """Every --spec-type value must be one the build lists (ngram-mod, draft-simple, draft-mtp, ... came at
    different times); a tool without --spec-type has no method but a draft model's, and the reason says so."""
    for i, arg in enumerate(argv[:-1]):
        if arg != "--spec-type":
            continue
        wanted = [t for t in argv[i + 1].split(",") if t != "none"]
        if "--spec-type" not in info.accepted and wanted:
            raise DialectError(
                f"spec type {', '.join(wanted)} is not offered by {tool} of build "
                f"{build_label}: its --help has no --spec-type (it speculates only with a draft "
                f"model, -md)"
            )
        lacking = [t for t in argv[i + 1].split(",") if info.spec_types and t not in info.spec_types]
        if lacking:
            raise DialectError(
                f"spec type {', '.join(lacking)} is not offered by {tool} of build "
                f"{build_label}: its --help lists --spec-type {', '.join(info.spec_types)}"
            )


def spec_methods(helps: dict[str, str]) -> dict[str, list[str]]:
    """Per speculating tool, the methods its --help offers (`orch builds`): the --spec-type values but `none`, or
    `draft-simple` alone for a tool that takes a draft model without --spec-type (the classic era)."""
    found = {}
    for tool, text in sorted(helps.items()):
        info = parse_help(text)
        methods = [t for t in info.spec_types if t != "none"]
        if "draft-simple" not in methods and info.accepted & set(flags.DRAFT_MODEL):
            methods.insert(0, "draft-simple")
        if methods:
            found[tool] = methods
    return found


def _translate_flag(arg: str, info: HelpInfo, tool: str, build_label: str, notes: list[str]) -> str:
    flag, eq, value = arg.partition("=")
    if flag in info.accepted:
        return arg
    for group in flags.RENAMED:
        if flag in group:
            spelling = next((f for f in group if f in info.accepted), None)
            if spelling:
                notes.append(f"{flag} -> {spelling} (the spelling {tool} of build {build_label} accepts)")
                return spelling + eq + value
    why = "was removed in" if flag in info.removed else "is not accepted by"
    close = difflib.get_close_matches(flag, sorted(info.accepted), n=3, cutoff=0.6)
    hint = f"; closest flags it has: {', '.join(close)}" if close else ""
    raise DialectError(f"flag {flag} {why} {tool} of build {build_label}{hint}")
