"""`orch bisect`: the first commit where a recipe arm's metric steps, found by building and running probes."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from orchestrator import config, resumable, store, tables
from orchestrator.bisect import candidates, driver, search, session
from orchestrator.bisect.driver import unbuilt_plan
from orchestrator.build.builder import choose_backend
from orchestrator.cli.group import Finite, db_option, main, metric_option, recipe_options, threshold_option
from orchestrator.errors import BisectRangeError, BisectResumeError
from orchestrator.recipe.set_lists import refuse_lists
from orchestrator.source.mirror import Mirror
from orchestrator.store import bisect_queries


@main.command("bisect")
@click.argument("recipe_path", metavar="[RECIPE]", type=click.Path(path_type=Path), required=False)
@click.option("--good", default=None, help="Commit (or release sha) where the metric is as it should be.")
@click.option("--bad", default=None, help="Commit where it has changed.")
@click.option(
    "--commits",
    default=None,
    metavar="A,B,...",
    help="The commits to search, in order, good end first (instead of the mirror's history or the release order).",
)
@click.option(
    "--arm",
    default=None,
    help="The recipe arm whose metric is followed (default: its only arm that is not the baseline).",
)
@metric_option
@threshold_option
@click.option("-r", "--repeat", type=click.IntRange(2, 10000), default=3, show_default=True, help="Repeats per probe.")
@click.option(
    "--max-repeat",
    type=click.IntRange(2, 10000),
    default=None,
    help="Repeats an unclear probe may get before it is called unclear [default: 3 x --repeat].",
)
@recipe_options(build=None, arms=None)
@click.option(
    "-t",
    "--timeout",
    type=Finite(min=0.1, max=10**7),
    default=600.0,
    show_default=True,
    help="Seconds before a run is killed.",
)
@click.option(
    "--backend",
    type=click.Choice(["auto", "cpu", "cuda"]),
    default="auto",
    show_default=True,
    help="Backend the probes are built for.",
)
@click.option(
    "--resume",
    "resume",
    is_flag=False,
    flag_value="latest",
    default=None,
    metavar="[BISECT]",
    help="Continue an interrupted bisect (default: the newest unfinished) with its own recipe and options.",
)
@click.option("--dry-run", is_flag=True, help="List the candidates and the first probes; build and run nothing.")
@db_option
def bisect_command(
    recipe_path,
    good,
    bad,
    commits,
    arm,
    metric,
    threshold,
    repeat,
    max_repeat,
    overrides,
    vars_file,
    models_dir,
    timeout,
    backend,
    resume,
    dry_run,
    db,
):
    """Find the first commit where a recipe's metric changes.

    Candidates between --good and --bad come from the mirror's first-parent history, else from the order of
    llama-cpp-python releases (their sdists imported as probes need them), or from --commits. Each probe builds
    the commit (only the recipe's tools, cached) and runs the recipe as a stored sweep; it is bad when its metric
    differs from the good end's beyond --threshold and significantly (the rule of `orch compare`), good when it
    does not and differs from the bad end; an unclear probe gets more repeats. Commits that do not build are
    skipped. Ctrl-C stops it; --resume goes on.

    Example: orch bisect recipes/spec_defaults.j2 --vars recipes/tiny.toml --good f49e91787 --bad 0c1e57098
    --metric acceptance
    """

    database = store.Database(db or config.db_path())
    say = lambda line: click.echo(tables.fill(line), err=True)  # noqa: E731
    if resume:
        row = _stored_bisect(database, resume)
        given = row["variables"] or {}
        setup = driver.Setup(
            recipe=Path(row["recipe_path"]),
            arm=row["arm"],
            metric=row["metric"],
            vars_file=Path(given["vars"]) if given.get("vars") else None,
            overrides=tuple(given.get("set") or ()),
            models=Path(given["models"]) if given.get("models") else None,
            timeout=given.get("timeout", timeout),
            backend=given.get("backend", "cpu"),
            say=say,
        )
        setup.tools = driver.recipe_tools(setup)
        cands = candidates.Candidates(
            row["candidates"]["commits"], row["candidate_source"], row["candidates"]["labels"]
        )
        threshold_value, repeat, max_repeat, bisect_id = row["threshold"], row["repeat"], row["max_repeat"], row["id"]
    else:
        if recipe_path is None:
            raise click.UsageError("give a RECIPE (or --resume to continue a stored bisect)")

        refuse_lists(tuple(overrides), "orch bisect", "bisect one setting; run the others with orch run --set")
        if commits:
            cands = candidates.given([c.strip() for c in commits.split(",") if c.strip()], good, bad)
        elif good and bad:
            cands = candidates.between(Mirror(config.mirror_dir()), good, bad)
        else:
            raise click.UsageError("give --good and --bad, or --commits A,B,...")
        threshold_value = threshold
        max_repeat = max_repeat or 3 * repeat
        if max_repeat < repeat:
            raise click.BadParameter(f"{max_repeat} is below --repeat {repeat}", param_hint="--max-repeat")
        setup = driver.Setup(
            recipe=recipe_path,
            arm=arm or "",
            metric=metric,
            vars_file=vars_file,
            overrides=tuple(overrides),
            models=models_dir,
            timeout=timeout,
            say=say,
        )
        setup.arm = arm or _only_arm(setup)
        setup.tools = driver.recipe_tools(setup)
        if dry_run:
            _dry_run(cands, setup, search)
            return
        setup.backend = choose_backend(backend)
        given_vars = {
            "vars": str(vars_file.absolute()) if vars_file else None,
            "set": list(overrides),
            "models": str(models_dir.absolute()) if models_dir else None,
            "timeout": timeout,
            "backend": setup.backend,
        }
        bisect_id = session.create(
            database,
            setup,
            cands,
            threshold=threshold_value,
            repeat=repeat,
            max_repeat=max_repeat,
            argv=sys.argv,
            given=given_vars,
        )
    say(
        f"orch: bisect {bisect_id}: {len(cands.commits)} candidates ({cands.source}), {setup.metric} of arm "
        f"{setup.arm}, threshold {threshold_value:.1%}, {repeat} repeats (up to {max_repeat}); tools: "
        f"{', '.join(setup.tools)}; at most {search.max_probes(len(cands.commits) - 2)} probes between the ends"
    )
    result = session.execute(
        database, bisect_id, setup, cands, threshold=threshold_value, repeat=repeat, max_repeat=max_repeat
    )

    click.echo(tables.render(session.evidence(result, cands, setup.metric), "table", session.EVIDENCE))
    click.echo(tables.fill(f"bisect {bisect_id}: {result.sentence(setup.metric)}"))


def _only_arm(setup) -> str:

    plan = unbuilt_plan(setup)
    arms = [a.name for a in plan.arms if not a.is_baseline and not a.is_control]
    if len(arms) != 1:
        raise BisectRangeError(
            f"{setup.recipe} has arms {', '.join(a.name for a in plan.arms)}: name the one to follow with --arm"
        )
    return arms[0]


def _stored_bisect(database, ref: str) -> dict:

    return resumable.stored_row(
        database,
        ref,
        resumable.Session(
            "bisect",
            BisectResumeError,
            "orch bisect RECIPE --good A --bad B",
            bisect_queries.latest_unfinished,
            bisect_queries.bisect_row,
            lambda row: f" ({(row['result'] or {}).get('sentence', '')})",
            units="probes",
        ),
    )


def _dry_run(cands, setup, search) -> None:
    click.echo(
        f"{len(cands.commits)} candidates ({cands.source}); arm {setup.arm}, {setup.metric}; tools to build: "
        f"{', '.join(setup.tools)}"
    )
    for i, commit in enumerate(cands.commits):
        label = cands.labels.get(commit)
        click.echo(f"  {i:>3}  {commit}{f'  ({label})' if label else ''}")
    click.echo(f"first probes (at most {search.max_probes(len(cands.commits) - 2)} between the ends):")
    for commit, why in search.first_probes(cands.commits):
        click.echo(f"  {commit[:9]}  {why}")
