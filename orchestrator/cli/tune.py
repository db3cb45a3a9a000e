"""`orch tune`: race a recipe's candidates (or a search space) to the fastest settings on this machine."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import asdict
from pathlib import Path

import click

from orchestrator import tables
from orchestrator.cli.group import Finite, arm_choice, db_option, main, opened_db, recipe_options
from orchestrator.cli.tune_answer import SHOWN_FINALISTS, printed
from orchestrator.errors import InvalidOption, LoopingWorkload, TuneResumeError
from orchestrator.store import tune_queries
from orchestrator.tune import session
from orchestrator.tune.preview import preview
from orchestrator.tune.race_settings import MOST_BUDGET, Budget
from orchestrator.tune.request import TuneRequest, TuneResult
from orchestrator.tune.rules import GRID_REPEATS, Rules

BUDGET_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|runs?)?\s*$")
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600}


def parse_budget(text: str | None):
    """`10m`, `90s`, `2h`, `200runs` (or `200`), or both comma-separated: the most one workload's race spends."""

    if not text:
        return Budget()
    runs = seconds = None
    for part in text.split(","):
        found = BUDGET_RE.match(part)
        if not found or float(found.group(1)) <= 0:
            raise click.BadParameter(
                f"{part!r} is not a budget; give e.g. 10m, 90s, 2h or 200runs", param_hint="--budget"
            )
        value, unit = float(found.group(1)), found.group(2) or "runs"
        if value * (1 if unit.startswith("run") else UNIT_SECONDS[unit]) > MOST_BUDGET:  # stored as a 32-bit count
            raise click.BadParameter(
                f"{part!r} is more than any race can spend; give at most {MOST_BUDGET:,} runs or seconds",
                param_hint="--budget",
            )
        if unit.startswith("run"):
            if value != int(value):
                raise click.BadParameter(f"{part!r}: runs are counted whole; give e.g. 200runs", param_hint="--budget")
            runs = int(value)
        else:
            seconds = value * UNIT_SECONDS[unit]
    return Budget(runs=runs, seconds=seconds)


@main.command("tune")
@click.argument("recipe_path", metavar="[RECIPE]", type=click.Path(path_type=Path), required=False)
@recipe_options(build="tune on", arms="race (plain decoding always races)")
@click.option(
    "--space",
    default=None,
    metavar="FILE|NAME[,NAME]",
    help="What to race instead of the recipe's arms: a TOML space file, or built-in spaces (ngram-mod, "
    "ngram-simple, ngram-map-k, ngram-cache, draft-simple, threads, gpu; all: every one this build "
    "and these variables can run).",
)
@click.option(
    "--workload",
    "workloads",
    default=None,
    metavar="NAME[,NAME]",
    help="Race once per workload: recipes/workloads/NAME.toml (prompt, n_predict) or a TOML file "
    "(default: the recipe's own prompt).",
)
@click.option(
    "--budget",
    default=None,
    metavar="10m|200runs",
    help="The most one workload's race spends, in wall time or runs (every run counts: baseline and "
    f"controls too) [default: what the full grid would cost at {GRID_REPEATS} repeats].",
)
@click.option(
    "--allow-output-change",
    is_flag=True,
    help="Keep candidates whose greedy output differs from their control's (said beside them).",
)
@click.option(
    "--measure",
    is_flag=True,
    help="Race every candidate, also those predicted slower than plain decoding before any run (by default "
    'they leave before round 1, and where all do the answer is "no speculation predicted").',
)
@click.option(
    "--max-runs",
    type=click.IntRange(3, 1000),
    default=Rules.max_runs,
    show_default=True,
    help="Runs per candidate after which more are not spent (survivors still apart are reported tied).",
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
    "--resume",
    "resume",
    is_flag=False,
    flag_value="latest",
    default=None,
    metavar="[TUNE]",
    help="Continue an interrupted tune (default: the newest unfinished) with its own recipe and options.",
)
@click.option(
    "--show",
    "show",
    is_flag=False,
    flag_value="latest",
    default=None,
    metavar="[TUNE]",
    help="Print a finished tune's answer again (default: the newest); runs nothing.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Check the tune and print what it would race per workload (the "
    "candidates, those that cannot run here and why, round 1's runs, the grid's, the budget); runs and "
    "stores nothing.",
)
@click.option("--json", "as_json", is_flag=True, help="The answer as JSON on stdout (progress stays on stderr).")
@click.option(
    "--explain",
    is_flag=True,
    help=f"Every finalist in the answer's table (by default the first {SHOWN_FINALISTS}, the rest counted).",
)
@db_option
def tune_command(
    recipe_path,
    build_ref,
    space,
    workloads,
    budget,
    allow_output_change,
    measure,
    max_runs,
    overrides,
    vars_file,
    models_dir,
    arm_patterns,
    timeout,
    resume,
    show,
    dry_run,
    as_json,
    explain,
    db,
):
    """Race speculation settings to the fastest on this machine.

    Before round 1 each candidate's speedup is predicted (`orch probe`: this machine's costs and the pair's
    acceptance, probed where nothing current is stored): those predicted below plain decoding, interval and all,
    leave, the rest race in the order of their predictions, and where none is left the answer is "no speculation
    predicted" after the probes alone (--measure races them anyway). The candidates (the recipe's arms, or --space)
    run in rounds; in each block of a round they run beside plain
    decoding (the baseline, itself the candidate "speculation off"), and each is scored by its decode speed over
    the baseline's in that block. After each round, candidates confidently slower than the yardstick (the best
    survivor measured at least twice, or plain decoding) are dropped (one-sided t on log speed ratios, noise pooled
    over candidates and controls, Holm-corrected at 5% per round); survivors run again, the most promising first
    when the budget cannot run them all. Failing, non-drafting, output-changing and looping candidates are out; a
    workload whose plain decoding loops is refused (exit 49). Ends with the winner and its command lines, or a
    tied set, or "not separated" when the budget ends first (these two with the leader's, labelled leader). Every
    run is an ordinary stored run; the tune is stored (tables tunes, tune_rounds, tune_events); `orch report --tune
    N` draws the race. Ctrl-C stops it; --resume goes on.

    Example: orch tune recipes/tune.j2 --workload repeat_list,code_edit --space ngram-mod,ngram-simple
    """

    say = lambda line: click.echo(tables.fill(line), err=True)  # noqa: E731
    if dry_run and (show or resume):
        raise click.UsageError("--dry-run checks a new tune; --show and --resume read a stored one")
    if show:
        found = _shown(show, db)
    elif resume:
        if recipe_path or space or workloads or budget:
            raise InvalidOption("--resume continues a tune with its own recipe and options; give only --resume")
        found = session.resume(resume, db, argv=sys.argv, say=say)
    else:
        if recipe_path is None:
            raise click.UsageError("give a RECIPE (or --resume / --show a stored tune)")
        request = TuneRequest(
            recipe=recipe_path,
            build_ref=build_ref,
            vars_file=vars_file,
            overrides=tuple(overrides),
            models=models_dir,
            arms=arm_choice(arm_patterns),
            space=space,
            workloads=tuple(w.strip() for w in (workloads or "").split(",") if w.strip()),
            budget=parse_budget(budget),
            rules=Rules(max_runs=max_runs, allow_output_change=allow_output_change),
            timeout=timeout,
            db=db,
            measure=measure,
        )
        if dry_run:
            return _print_preview(request, as_json)
        found = session.start(request, argv=sys.argv, say=say)
    if as_json:
        click.echo(json.dumps(found.to_dict(), indent=1, default=str))
    else:
        for a in found.answers:
            click.echo(printed(a, explain))
        click.echo(tables.fill(f"verdict: {found.verdict}"))
    refused = [a.workload for a in found.answers if a.state == "refused"]
    if refused and not show:
        raise LoopingWorkload(
            f"tune {found.tune_id}: refused {', '.join(refused)}: plain decoding loops there "
            f"(see the verdict); give a workload whose text does not loop"
        )


def _print_preview(request, as_json: bool) -> None:
    shown = preview(request)
    if as_json:
        click.echo(json.dumps([asdict(p) for p in shown], indent=1))
        return
    for p in shown:
        click.echo(
            tables.fill(
                f"== {p.workload}: {len(p.candidates)} candidates (plain decoding first), round 1 "
                f"{p.first_round_runs} runs, the grid {p.grid_runs}, budget {p.budget} =="
            )
        )
        for name in p.candidates:
            click.echo(
                tables.fill(
                    f"  {name}" + (f": cannot run here: {p.infeasible[name]}" if name in p.infeasible else ""),
                    indent="    ",
                )
            )
        for note in p.notes:
            click.echo(tables.fill(f"note: {note}"))


def _shown(ref: str, db) -> TuneResult:
    """The finished tune --show names, read back into its answers (TuneResult)."""

    with opened_db(db) as con:
        row = (
            tune_queries.latest_tune(con)
            if ref == "latest"
            else (tune_queries.tune_row(con, int(ref)) if ref.isdigit() else None)
        )
    if row is None or row["state"] != "done":
        what = "no finished tune" if row is None else f"tune {row['id']} is {row['state']}"
        raise TuneResumeError(
            f"--show {ref}: {what}; list tunes with `orch query 'SELECT id, state, recipe_path FROM tunes'`"
        )
    return TuneResult.stored(row)
