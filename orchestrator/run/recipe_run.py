"""Running a recipe, the one way: from a recipe file to a stored sweep. `orch run`, `orch bisect`, the Ray worker
and `orch tune` all go through here, so a recipe runs under the same rules whoever asks.

    prepared = prepare_recipe(RecipeRequest(recipe=Path("recipes/recipe_a.j2"), vars_file=...))
    result = run_prepared(prepared, RunOptions(timeout=600))

prepare_recipe: the build, the built-in variables, the rendered plan, the mode's pre-steps (quality mode's tools
and quantized files), each arm's dialect and pre-flight, the depth fit (quality and bench modes). Nothing is written.
run_prepared: the build (and quants) registered in the results file, quality mode's base logits, the sweep opened
(or resumed), every slot executed and stored, the sweep ended and its summary kept.
A Ray worker, which receives a rendered plan rather than a recipe file, enters at prepare_plan.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator import config, store
from orchestrator.build.builder import register, tool_path
from orchestrator.build.finished import Build
from orchestrator.build.on_disk import runnable_build
from orchestrator.errors import InvalidOption
from orchestrator.parse.modes import mode_of
from orchestrator.recipe.plan import Plan, choose_arms, load
from orchestrator.recipe.schedule import Slot
from orchestrator.run import depth_fit, prepare, quality, sweep
from orchestrator.run.prepare import PreparedArm
from orchestrator.run.progress import Progress


@dataclass(frozen=True)
class RecipeRequest:
    """A recipe as a user asks for it: the file, the build, and the variables' layers."""

    recipe: Path
    build_ref: str | None = None  # a commit prefix, tag or build name; None: the default build
    vars_file: Path | None = None
    overrides: tuple[str, ...] = ()  # --set KEY=VALUE
    models: Path | None = None
    repeat: int | None = None  # None: the recipe's own
    translate: bool = True  # the build's flag dialect (--no-dialect: False)
    arms: tuple[str, ...] = ()  # --arms: globs on arm names; the baseline comes along, controls follow the arms
    db: Path | None = None  # None: $ORCH_DB or ./results.duckdb


@dataclass
class PreparedRecipe:
    """A recipe rendered for its build and checked, ready to run; nothing of it is stored yet."""

    build: Build
    plan: Plan
    arms: list[PreparedArm]
    database: store.Database
    quants: list = field(default_factory=list)  # quality mode: the quantized files its arms measure


@dataclass
class RunOptions:
    """How the prepared recipe's slots run: order, warm-up, limits, and what a resume or a Ray shard changes."""

    timeout: float | None = 600.0
    telemetry_interval: float = 0.2
    order: str = "interleaved"
    warmup: int = 0
    resume: str | None = None  # a sweep number, "latest", or None for a new sweep
    repeat_given: bool = False  # --repeat was given: a resumed sweep takes it instead of its own
    orch_argv: list[str] = field(default_factory=lambda: list(sys.argv))
    progress: Progress | None = None
    keep_summary: bool = True  # False for a file that is only exported (a Ray shard)
    uid: str | None = None  # a Ray shard: the sweep's global id
    only: list[Slot] | None = None  # a Ray shard: the slots it was given


def builtins(build: Build) -> dict:
    """The variables orch itself gives every recipe: `bin` and `build`."""
    return {"bin": build.bin_dir, "build": build.described()}


def prepare_recipe(request: RecipeRequest, build: Build | None = None, *, executor: str = "local") -> PreparedRecipe:
    """The recipe rendered for its build (`build`, else request.build_ref's) and checked; nothing written.
    executor: where it will run (a mode the Ray executor cannot run is refused before any work)."""
    build = build or runnable_build(request.build_ref)
    plan = choose_arms(load(request.recipe, builtins=builtins(build), vars_file=request.vars_file,
                            overrides=request.overrides, repeat=request.repeat, models=request.models), request.arms)
    if executor == "ray" and not mode_of(plan.mode).on_ray:  # its base logits and quants are made on this machine
        raise InvalidOption("quality mode runs with the local executor only: its base logits and quantized files "
                            "are made and cached on this machine; drop --executor ray")
    return prepare_plan(plan, build, database=store.Database(request.db or config.db_path()),
                        translate=request.translate)


def prepare_plan(plan: Plan, build: Build, *, database: store.Database, translate: bool = True) -> PreparedRecipe:
    """A rendered plan's mode pre-steps, dialect and pre-flight, and depth fit, on this build."""
    quants = []
    if plan.mode == "quality":  # a build made before quality mode gets its tools added (same binaries, same id)
        for tool in ("llama-quantize", "llama-perplexity"):
            build, _ = tool_path(build.name, tool)
        quants = quality.make_quants(plan, build)
    arms = prepare.prepare(plan, build, translate=translate)
    if plan.mode in ("quality", "bench"):  # depth is their point: say before launch when one does not fit
        depth_fit.check(arms, build, plan.mode)
    return PreparedRecipe(build, plan, arms, database, quants)


def record_setup(prepared: PreparedRecipe) -> None:
    """What every run of the sweep refers to, stored before it: the build, the quantized files, and quality mode's
    base logits (a text too short stops here, before a sweep row exists)."""
    with prepared.database.write() as con:
        register(con, prepared.build, only_if_missing=True)  # every run's build is described in the same file
        for q in prepared.quants:
            store.record_quant(con, q.to_dict())
    if prepared.plan.mode == "quality":
        quality.prepare_bases(prepared.database, prepared.build, prepared.arms)


def open_sweep(prepared: PreparedRecipe, options: RunOptions) -> sweep.Sweep:
    """record_setup, then the sweep row (new, resumed, or a shard's)."""
    record_setup(prepared)
    return sweep.open_sweep(prepared.database, prepared.plan, prepared.build, prepared.arms,
                            orch_argv=options.orch_argv, order=options.order, warmup=options.warmup,
                            resume_ref=options.resume, repeat_given=options.repeat_given, uid=options.uid,
                            only=options.only)


def run_prepared(prepared: PreparedRecipe, options: RunOptions | None = None) -> sweep.SweepResult:
    """The whole sweep: set up, opened, every slot run and stored, ended, its summary kept."""
    options = options or RunOptions()
    opened = open_sweep(prepared, options)
    return execute(prepared, opened, options)


def execute(prepared: PreparedRecipe, opened: sweep.Sweep, options: RunOptions) -> sweep.SweepResult:
    return sweep.execute(prepared.database, opened, timeout=options.timeout,
                         telemetry_interval=options.telemetry_interval, progress=options.progress,
                         keep_summary=options.keep_summary)
