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
from dataclasses import dataclass, field, replace
from itertools import zip_longest
from pathlib import Path

from orchestrator import config, store, tables
from orchestrator.build.builder import register, tool_path
from orchestrator.build.finished import Build
from orchestrator.build.on_disk import runnable_build
from orchestrator.errors import InvalidOption
from orchestrator.parse.modes import mode_of, names_where
from orchestrator.recipe.plan import Plan, choose_arms, load
from orchestrator.recipe.schedule import Slot
from orchestrator.run import depth_fit, predictions, prepare, quality, quality_quants, sweep, sweep_open
from orchestrator.run.prepare import PreparedArm
from orchestrator.run.progress import Progress
from orchestrator.store import probes


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
    space: tuple[dict, ...] | None = None  # orch tune: grids that replace the recipe's arms and matrix


@dataclass
class PreparedRecipe:
    """A recipe rendered for its build and checked, ready to run; nothing of it is stored yet."""

    build: Build
    plan: Plan
    arms: list[PreparedArm]
    database: store.Database
    quants: list = field(default_factory=list)  # quality mode: the quantized files its arms measure
    builds: list[Build] = field(default_factory=list)  # `--build A,B`: every build its arms are crossed with
    translate: bool = True  # flags in the build's dialect (a Ray node prepares the plan again, as this was)


@dataclass
class RunOptions:
    """How the prepared recipe's slots run: order, warm-up, limits, and what a resume or a Ray shard changes."""

    timeout: float | None = 600.0
    telemetry_interval: float = 0.2
    order: str = "interleaved"
    warmup: int | None = None  # warm-up runs per arm; None: the recipe's own (meta "warmup", else none)
    resume: str | None = None  # a sweep number, "latest", or None for a new sweep
    repeat_given: bool = False  # --repeat was given: a resumed sweep takes it instead of its own
    orch_argv: list[str] = field(default_factory=lambda: list(sys.argv))
    progress: Progress | None = None
    keep_summary: bool = True  # False for a file that is only exported (a Ray shard)
    uid: str | None = None  # a Ray shard: the sweep's global id
    only: list[Slot] | None = None  # a Ray shard: the slots it was given
    predict: bool = False  # probe where needed and store each drafting arm's predicted speedup before it runs

    def warmup_for(self, plan: Plan) -> int:
        return plan.warmup if self.warmup is None else self.warmup


def builtins(build: Build) -> dict:
    """The variables orch itself gives every recipe: `bin` and `build`."""
    return {"bin": build.bin_dir, "build": build.described()}


def prepare_recipe(request: RecipeRequest, build: Build | None = None, *, executor: str = "local") -> PreparedRecipe:
    """The recipe rendered for its build (`build`, else request.build_ref's) and checked; nothing written.
    executor: where it will run (a mode the Ray executor cannot run is refused before any work). Several builds
    (`--build A,B`): one sweep crossing the arms with them (prepare_crossed)."""
    refs = [r.strip() for r in (request.build_ref or "").split(",") if r.strip()]
    if build is None and len(refs) > 1:
        return prepare_crossed(request, refs, executor=executor)
    build = build or runnable_build(request.build_ref)
    plan = choose_arms(
        load(
            request.recipe,
            builtins=builtins(build),
            vars_file=request.vars_file,
            overrides=request.overrides,
            repeat=request.repeat,
            models=request.models,
            space=None if request.space is None else list(request.space),
        ),
        request.arms,
    )
    if executor == "ray" and not mode_of(plan.mode).on_ray:  # its base logits and quants are made on this machine
        raise InvalidOption(
            f"{plan.mode} mode runs with the local executor only: its base logits and quantized "
            f"files are made and cached on this machine; drop --executor ray"
        )
    return prepare_plan(
        plan, build, database=store.Database(request.db or config.db_path()), translate=request.translate
    )


def prepare_plan(plan: Plan, build: Build, *, database: store.Database, translate: bool = True) -> PreparedRecipe:
    """A rendered plan's mode pre-steps, dialect and pre-flight, and depth fit, on this build."""
    quants, mode = [], mode_of(plan.mode)
    if mode.measures_quality:  # a build made before quality mode gets its tools added (same binaries, same id)
        for tool in quality.TOOLS:
            build, _ = tool_path(build.name, tool)
        quants = quality_quants.make_quants(plan, build)
    arms = prepare.prepare(plan, build, translate=translate)
    if mode.fits_depth:  # depth is their point: say before launch when one does not fit
        depth_fit.check(arms, build, mode)
    return PreparedRecipe(build, plan, arms, database, quants, translate=translate)


def prepare_crossed(request: RecipeRequest, refs: list[str], *, executor: str = "local") -> PreparedRecipe:
    """`--build A,B[,...]`: the recipe prepared for each build, its arms crossed with the builds in one plan, named
    `BUILD/ARM` and ordered arm by arm (A's baseline, B's baseline, A's first arm, B's, ...), so that the sweep's
    interleaved order alternates the builds within every repeat and drift hits each alike. Each build's arms are
    measured against its own control, as in a sweep of one build; only the first build's baseline is the sweep's
    baseline, and every other build's baseline is a control measured against it (the builds' plain decoding,
    paired by repeat: never a speculation result). CLI and bench modes (a server or quality sweep runs one build:
    run it per build, then compare)."""
    builds = list({b.name: b for b in (runnable_build(r) for r in refs)}.values())
    if len(builds) < 2:
        raise InvalidOption(
            f"--build {','.join(refs)} names one build ({builds[0].name}); name two builds to cross, "
            f"or one to run alone"
        )
    if executor != "local":
        raise InvalidOption(
            "--build with several builds runs with the local executor: its runs alternate on one "
            "machine; drop --executor ray (or run each build there and compare them)"
        )
    each = [prepare_recipe(replace(request, build_ref=b.name), b) for b in builds]
    mode = each[0].plan.mode
    if not mode_of(mode).crosses_builds:
        crossing = " and ".join(names_where("crosses_builds"))
        raise InvalidOption(
            f"--build with several builds crosses {crossing} recipes; this is a {mode} recipe: run "
            f"it once per build (--build {builds[0].name}, then --build {builds[1].name}) and compare "
            f"them with `orch compare --base {builds[0].name} --head {builds[1].name}`"
        )
    first_baseline = next((p.arm.name for p in each[0].arms if p.arm.is_baseline), None)
    for prepared, build in zip(each, builds):
        names = {p.arm.name: f"{build.name}/{p.arm.name}" for p in prepared.arms}
        for p in prepared.arms:
            p.arm = replace(p.arm, name=names[p.arm.name], reference=names.get(p.arm.reference, p.arm.reference))
            p.build = build
            if p.arm.is_baseline and build is not builds[0]:  # the other builds' plain decoding, against the first's
                p.arm = replace(
                    p.arm, is_baseline=False, is_control=True, reference=f"{builds[0].name}/{first_baseline}"
                )
    crossed = [p for group in zip_longest(*(e.arms for e in each)) for p in group if p is not None]
    plan = replace(each[0].plan, arms=[p.arm for p in crossed])
    return PreparedRecipe(builds[0], plan, crossed, each[0].database, builds=builds)


def record_setup(prepared: PreparedRecipe) -> None:
    """What every run of the sweep refers to, stored before it: the build, the quantized files, and quality mode's
    base logits (a text too short stops here, before a sweep row exists)."""
    with prepared.database.write() as con:
        for build in prepared.builds or [prepared.build]:  # every run's build is described in the same file
            register(con, build, only_if_missing=True)
        for q in prepared.quants:
            store.record_quant(con, q.to_dict())
    if mode_of(prepared.plan.mode).measures_quality:
        quality.prepare_bases(prepared.database, prepared.build, prepared.arms)


def open_sweep(prepared: PreparedRecipe, options: RunOptions) -> sweep_open.Sweep:
    """record_setup, then the sweep row (new, resumed, or a shard's)."""
    record_setup(prepared)
    return sweep_open.open_sweep(
        prepared.database,
        prepared.plan,
        prepared.build,
        prepared.arms,
        orch_argv=options.orch_argv,
        order=options.order,
        warmup=options.warmup_for(prepared.plan),
        resume_ref=options.resume,
        repeat_given=options.repeat_given,
        uid=options.uid,
        only=options.only,
    )


def run_prepared(prepared: PreparedRecipe, options: RunOptions | None = None) -> sweep.SweepResult:
    """The whole sweep: set up, opened, every slot run and stored, ended, its summary kept."""
    options = options or RunOptions()
    predicted = []
    if options.predict and not options.resume:
        predicted = predictions.before_sweep(
            prepared.database, prepared.build, prepared.arms, prepared.plan.mode, crossed=len(prepared.builds) > 1
        )
    opened = open_sweep(prepared, options)
    if predicted and not opened.resumed:
        with prepared.database.write() as con:
            probes.insert_predictions(con, predictions.stored_rows(opened.id, predicted))
        for line in predictions.lines(predicted):
            print(tables.fill(line), file=sys.stderr)
    return execute(prepared, opened, options)


def execute(prepared: PreparedRecipe, opened: sweep_open.Sweep, options: RunOptions) -> sweep.SweepResult:
    return sweep.execute(
        prepared.database,
        opened,
        timeout=options.timeout,
        telemetry_interval=options.telemetry_interval,
        progress=options.progress,
        keep_summary=options.keep_summary,
    )
