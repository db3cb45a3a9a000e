"""Before anything launches: each arm's argv in the build's dialect, its models checked, its memory estimated.

Problems are recorded on the arm (stored later as a skipped or failed run with its reason), never raised:
one bad arm must not stop the others. Missing model files are the exception: they stop the command at once, every
one named (models/resolve.py), before anything is stored, since no arm of such a plan measures what was asked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from orchestrator.build.finished import Build
from orchestrator.errors import DialectError, PreflightError
from orchestrator.machine import gpu
from orchestrator.models import draft_cost, gguf_info, memfit, preflight, resolve
from orchestrator.parse.modes import mode_of, request_params
from orchestrator.recipe import control, dialect, prompts
from orchestrator.recipe.plan import Arm, Plan


@dataclass
class PreparedArm:
    arm: Arm
    executed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stop_status: str | None = None  # skipped / failed when the arm cannot be launched
    stop_class: str | None = None
    stop_reason: str | None = None
    models: preflight.ModelsUsed | None = None
    memfit: memfit.MemFit | None = None  # stored as its to_dict() (runs.memfit JSON)
    prompt_set: str | None = None  # server mode: "<name>@<sha256 of the records, 12 hex>"
    model_notes: list[str] = field(default_factory=list)  # which fetched file a hub reference is; the draft's cost
    draft_warning: str | None = None  # before launch: a draft no acceptance can make pay (models/draft_cost)
    build: Build | None = None  # the build it runs on, where a sweep crosses arms with builds; None: the sweep's


def prepare(plan: Plan, build: Build, *, translate: bool = True) -> list[PreparedArm]:
    """Dialect translation and pre-flight for every arm; problems are recorded on the arm, not raised, but for
    missing model files (MissingModels) and hub references that cannot be fetched (HubError)."""
    helps = build.help_texts()  # what the dialect layer reads flags from
    mode = mode_of(plan.mode)
    arms = control.with_controls(plan.arms) if mode.controls else plan.arms
    located = resolve.locate(arms)
    inspected: dict = {}

    def inspect_once(path):
        if path not in inspected:
            inspected[path] = gguf_info.inspect(path)
        return inspected[path]

    prepared = []
    for arm in arms:
        p = PreparedArm(arm, model_notes=located.notes(arm))
        argv = located.localised(arm)  # ~ expanded, hub references as their files in the cache
        try:
            # Models first (their flags read the same in every dialect): a skipped arm keeps its model hashes,
            # so compare can still pair it with the other build's runs.
            p.models = preflight.check(argv, inspect=inspect_once)
            located.verify(arm, p.models)
            if cost := draft_cost.draft_cost(p.models.target, p.models.draft):
                p.model_notes.append(cost.note())
                p.draft_warning = cost.warning()
            t = dialect.translate(argv, arm.literal, helps, build.name, enabled=translate, bin_dir=build.bin_dir)
            p.executed, p.notes = t.argv, t.notes
            if mode.bench_tests:  # machine output, one JSON object per test, whatever the recipe asked
                p.executed = bench_argv(p.executed)
            p.memfit = _memory_estimate(p, build)
            if mode.serves:  # the prompts its requests send
                name, items = prompts.load(request_params(arm.params)["prompt_set"])
                p.prompt_set = prompts.identity(name, items)
        except DialectError as exc:
            p.stop_status, p.stop_class, p.stop_reason = "skipped", "unknown_flag", str(exc)
        except PreflightError as exc:
            cls = getattr(exc, "failure_class", None) or (
                "vocab_mismatch" if "cannot speculate" in str(exc) else "model_load"
            )
            # A method that does not apply to these models (an MTP type on a target without MTP layers) is what
            # the models are, not a failure: skipped with the reason, as a flag the build lacks is.
            p.stop_status = "skipped" if cls == "spec_mismatch" else "failed"
            p.stop_class, p.stop_reason = cls, str(exc)
        prepared.append(p)
    return _without_stopped_controls(prepared)


def bench_argv(argv: list[str]) -> list[str]:
    """llama-bench's argv with its output format set to jsonl (any -o/--output of the recipe replaced)."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("-o", "--output"):
            skip = True
        elif not arg.startswith("--output="):
            out.append(arg)
    return [*out, "-o", "jsonl"]


def _without_stopped_controls(prepared: list[PreparedArm]) -> list[PreparedArm]:
    """A control the build cannot run (no --spec-type before mid-2026) leaves its arms paired with the baseline,
    across programs, and each such arm says so; the control is still stored, as skipped, with its reason."""
    stopped = {p.arm.name: p.stop_reason for p in prepared if p.arm.is_control and p.stop_reason}
    base = next((p.arm.name for p in prepared if p.arm.is_baseline), None)
    for p in prepared:
        if p.arm.reference in stopped:
            p.notes.append(
                f"speedup against {base} across programs: the control {p.arm.reference} cannot run here "
                f"({stopped[p.arm.reference]})"
            )
            p.arm = replace(p.arm, reference=base)
    return prepared


def _memory_estimate(p: PreparedArm, build: Build) -> memfit.MemFit | None:
    """Weights + KV against free GPU memory; for CPU builds only the estimate (nothing goes to a GPU)."""
    if not p.models or not p.models.target:
        return None
    free = gpu.free_bytes(0) if build.cuda else None
    try:
        return memfit.from_argv(p.executed, p.models.target, p.models.draft, free_bytes=free)
    except ValueError:  # a cache type or layer count memfit cannot read: no estimate rather than no run
        return None


def dry_run_rows(prepared: list[PreparedArm]) -> list[dict]:
    """What --dry-run shows, as data (`orch run --dry-run --json`): per arm its role, argv rendered and executed,
    dialect notes and why it would not run."""
    return [
        {
            "arm": p.arm.name,
            "baseline": p.arm.is_baseline,
            "control": p.arm.is_control,
            "reference": p.arm.reference,
            "rendered": p.arm.argv,
            "executed": p.executed or None,
            "dialect": p.notes,
            "models": p.model_notes,
            "draft_warning": p.draft_warning,
            "stop_status": p.stop_status,
            "stop_class": p.stop_class,
            "stop_reason": p.stop_reason,
        }
        for p in prepared
    ]


def dry_run_lines(prepared: list[PreparedArm]) -> list[str]:
    lines = []
    for p in prepared:
        role = (
            " (baseline)"
            if p.arm.is_baseline
            else f" (control, against {p.arm.reference})"
            if p.arm.is_control
            else f" (against {p.arm.reference})"
            if p.arm.reference
            else ""
        )
        lines.append(f"arm {p.arm.name}{role}:")
        lines.append(f"  rendered: {json.dumps(p.arm.argv)}")
        lines += [f"  {n}" for n in p.model_notes]
        if p.draft_warning:
            lines.append(f"  warning: {p.draft_warning}")
        if p.stop_reason:
            lines.append(f"  {p.stop_status}: {p.stop_reason}")
            continue
        lines.append(f"  executed: {json.dumps(p.executed)}")
        lines += [f"  dialect: {n}" for n in p.notes]
    return lines
