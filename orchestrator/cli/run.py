"""`orch run`: a recipe's arms on a build, supervised and stored."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import click

from orchestrator import config, tables
from orchestrator.analyze import summaries
from orchestrator.analyze.summaries.draw import summary_text
from orchestrator.build.on_disk import default_build, runnable
from orchestrator.cli.group import Finite, arm_choice, db_option, main, recipe_options
from orchestrator.cluster import executor as ray_executor
from orchestrator.cluster.executor import RayOptions, require_ray
from orchestrator.errors import InvalidOption
from orchestrator.machine import host_load
from orchestrator.parse.modes import mode_of
from orchestrator.recipe import set_lists
from orchestrator.recipe.plan import read_recipe
from orchestrator.run import predictions, prepare, recipe_run


@main.command("run")
@click.argument("recipe_path", metavar="RECIPE", type=click.Path(path_type=Path))
@recipe_options(
    build="use",
    builds="It is named on the first line. Several, A,B: one sweep with every arm on each build, "
    "interleaved, for `orch compare` (CLI and bench recipes).",
    sets="Set a recipe variable (repeatable). A comma list, KEY=8,16 (numbers, booleans or bare words), runs one "
    "sweep per value, every combination of the lists, each with its own baseline.",
    models="a `models` key in --vars or --set overrides it. A model value may also be an absolute or ~ path, or "
    "hf:OWNER/REPO/FILE.gguf or OWNER/REPO:QUANT, fetched into the Hugging Face cache.",
    arms="run (e.g. 'ngram-*,mtp:*'); the baseline, and the controls the chosen arms are measured against, come "
    "along; models only other arms name are not needed",
)
@click.option(
    "-r", "--repeat", type=click.IntRange(1, 10000), default=None, help="Repeats per arm (default: recipe's)."
)
@click.option(
    "-t",
    "--timeout",
    type=Finite(min=0.1, max=10**7),
    default=600.0,
    show_default=True,
    help="Seconds before a run is killed.",
)
@click.option(
    "-w",
    "--warmup",
    type=click.IntRange(0, 1000),
    default=None,
    help="Warm-up runs per arm before measuring (stored, never counted) [default: the recipe's meta `warmup`, else 0].",
)
@click.option(
    "--order",
    type=click.Choice(["interleaved", "sequential", "latin"]),
    default="interleaved",
    show_default=True,
    help="Run order: round-robin arms per repeat, arm by arm, or a Latin square.",
)
@click.option(
    "--resume",
    "resume",
    is_flag=False,
    flag_value="latest",
    default=None,
    metavar="[SWEEP]",
    help="Continue a sweep of the same recipe, build and variables (default: the newest), running only "
    "what it lacks; when none matches, an error lists the candidates.",
)
@click.option(
    "--telemetry-interval",
    type=Finite(min=0, max=3600),
    default=0.2,
    show_default=True,
    help="Seconds between telemetry samples (GPU via NVML, process tree via psutil); 0 turns the sampler off "
    "(peak RSS and CPU time still come from the kernel at exit).",
)
@click.option("--dry-run", is_flag=True, help="Print each arm's rendered and executed argv; run nothing.")
@click.option("--json", "as_json", is_flag=True, help="With --dry-run: the arms as JSON (for scripts).")
@click.option("--no-dialect", is_flag=True, help="Run the rendered argv as written (no flag translation).")
@click.option(
    "--no-predict",
    is_flag=True,
    help="Start without predicting each drafting arm's speedup (by default "
    "a CLI sweep probes this machine's costs and the pair's acceptance where none is stored, `orch probe`, "
    "and prints and stores each prediction before the first run).",
)
@click.option(
    "--no-summary",
    is_flag=True,
    help="End without the summary table, warnings and verdict (progress "
    "still prints): for scripts that print them once for several sweeps with `orch summary`.",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where runs execute: this machine, or the nodes of a Ray cluster (pip install 'orch[ray]'), each "
    "round a Ray task on a whole GPU (all CPU cores for CPU builds), results merged here.",
)
@click.option(
    "--address",
    default="auto",
    show_default=True,
    metavar="auto|ray://HOST:PORT",
    help="Ray cluster to use (--executor ray): auto is the one `ray start` joined on this machine.",
)
@click.option(
    "--gpus-per-run",
    type=Finite(min=0, min_open=True, max=1024),
    default=1,
    show_default=True,
    help="GPUs each run reserves on its node (--executor ray, CUDA builds).",
)
@click.option(
    "--hosts",
    default=None,
    metavar="H1,H2",
    help="Only these Ray nodes (hostname or IP) (--executor ray; default: every alive node).",
)
@click.option(
    "--each-host",
    is_flag=True,
    help="Run the whole sweep once on every selected node, one sweep per "
    "node (--executor ray): the same recipe on each machine, for `orch compare --base-host --head-host`.",
)
@click.option(
    "--wait-quiet",
    type=click.FloatRange(0, 86400),
    is_flag=False,
    flag_value=300.0,
    default=None,
    metavar="[SECONDS]",
    help="Before the first run, wait (up to SECONDS; 300 when none is given) until other programs use at most "
    "ORCH_BUSY_PCT (10%) of the machine, and say so; past it, measure anyway (busy_machine names the arms).",
)
@db_option
def run_command(
    recipe_path,
    build_ref,
    overrides,
    vars_file,
    models_dir,
    repeat,
    timeout,
    warmup,
    order,
    resume,
    telemetry_interval,
    dry_run,
    as_json,
    no_dialect,
    no_predict,
    no_summary,
    executor,
    address,
    gpus_per_run,
    hosts,
    each_host,
    arm_patterns,
    wait_quiet,
    db,
):
    """Run a recipe's arms on a build and store them.

    Renders RECIPE for the build, translates flags to its dialect, checks models, runs every
    arm x repeat under supervision and stores runs, metrics and raw logs. Missing model files
    stop it before anything runs or is stored, all named (exit 33).

    Example: orch run recipes/recipe_a.j2 --vars recipes/tiny.toml --repeat 3
    """
    # Every command runs under stops.on_signals (cli/group.py): Ctrl-C, SIGTERM or SIGHUP before the sweep exists
    # ends the command (130, 143, 129) with nothing half-written; during the sweep the run in flight is stored
    # interrupted, once.

    if as_json and not dry_run:
        raise InvalidOption("--json goes with --dry-run (a sweep's results: orch summary --format json)")
    if executor == "local" and (each_host or hosts or address != "auto" or gpus_per_run != 1):
        raise InvalidOption("--address, --gpus-per-run, --hosts and --each-host need --executor ray")
    ray = None
    if executor == "ray":
        require_ray()  # before any work: the error says how to install it
        if resume:
            raise InvalidOption(
                "--resume works with the local executor only; run the rest with --executor local or start a new sweep"
            )
        ray = RayOptions(address, gpus_per_run, tuple(h for h in (hosts or "").split(",") if h), each_host)
    request = recipe_run.RecipeRequest(
        recipe=recipe_path,
        build_ref=build_ref,
        vars_file=vars_file,
        overrides=tuple(overrides),
        models=models_dir,
        repeat=repeat,
        translate=not no_dialect,
        db=db,
        arms=arm_choice(arm_patterns),
    )
    options = recipe_run.RunOptions(
        timeout=timeout,
        telemetry_interval=telemetry_interval,
        order=order,
        warmup=warmup,
        resume=resume,
        repeat_given=repeat is not None,
        predict=not no_predict,
    )
    run_recipe(request, options, ray, dry_run=dry_run, as_json=as_json, summary=not no_summary, wait_quiet=wait_quiet)


def run_recipe(
    request, options, ray, *, dry_run: bool, as_json: bool, summary: bool, wait_quiet: float | None = None
) -> None:
    """The recipe prepared (the default build named first when none was given), then its arms printed (--dry-run)
    or run here or on Ray, once per combination of --set lists (recipe/set_lists.py), and the summary of the sweeps
    it stored."""

    build = chosen_build(request)
    each = set_lists.combinations(request.overrides)
    if len(each) > 1 and options.resume:
        raise InvalidOption("--resume continues one sweep; give one value per --set variable")
    executor = "ray" if ray else "local"  # every combination checked before the first runs
    prepared = [recipe_run.prepare_recipe(replace(request, overrides=o), build, executor=executor) for o in each]
    if dry_run:
        listed = [[o for o in overrides if o not in request.overrides] for overrides in each]
        if as_json:
            shown = [_dry_run_json(p, items) for p, items in zip(prepared, listed)]
            click.echo(json.dumps(shown[0] if len(shown) == 1 else shown, indent=1))
        else:
            for p, items in zip(prepared, listed):
                _dry_run_text(p, items)
        return
    if wait_quiet is not None:  # every check passed: what is left is to measure, alone
        host_load.wait_quiet(wait_quiet, config.busy_pct(), lambda line: click.echo(tables.fill(line), err=True))
    results = []
    for one in prepared:
        results += _run(one, options, ray)
        if any(r.status == "interrupted" for r in results):
            break  # Ctrl-C stops the command, not one combination of it
    if summary:
        with prepared[0].database.read() as con:
            click.echo(summary_text(summaries.read(con, [r.sweep_id for r in results]).summaries))
    for result in results:
        result.raise_for_status()


def chosen_build(request):
    """The default build where the request names none, said on stderr first with the others it was chosen from;
    None where it names one (prepare_recipe resolves it). A recipe that is not there is said before either."""

    read_recipe(request.recipe)
    if request.build_ref:
        return None

    chosen = default_build()
    click.echo(chosen.line(), err=True)
    return runnable(chosen.build)


def _dry_run_json(prepared, listed: list[str]) -> dict:
    names = ",".join(b.name for b in prepared.builds) or prepared.build.name
    return {
        "build": names,
        "repeat": prepared.plan.repeat,
        "mode": prepared.plan.mode,
        **({"set": listed} if listed else {}),
        "arms": prepare.dry_run_rows(prepared.arms),
        "predictions": predictions.stored_rows(None, _predicted(prepared)),
    }


def _dry_run_text(prepared, listed: list[str]) -> None:
    where = (
        f"builds {','.join(b.name for b in prepared.builds)}, crossed and interleaved"
        if prepared.builds
        else f"build {prepared.build.name} ({prepared.build.dir})"
    )
    click.echo(f"{where}, {prepared.plan.repeat} repeat(s){', --set ' + ' '.join(listed) if listed else ''}")
    click.echo("\n".join(prepare.dry_run_lines(prepared.arms)))
    for line in predictions.lines(_predicted(prepared)):
        click.echo(tables.fill(line.removeprefix("orch: ")))


def _predicted(prepared) -> list:
    """Each drafting arm's prediction from the probes stored already (a dry run probes nothing and writes
    nothing), or the probe it lacks."""

    if prepared.builds or not mode_of(prepared.plan.mode).predicts:
        return []
    return predictions.predict_arms(prepared.database, prepared.build, prepared.arms, probe_now=False)


def _run(prepared, options, ray) -> list:
    """One sweep of the prepared recipe, here or on Ray (one per host there)."""
    if ray:
        return ray_executor.run_prepared_on_ray(prepared, options, ray)

    return [recipe_run.run_prepared(prepared, options)]
