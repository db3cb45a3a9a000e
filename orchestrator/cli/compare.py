"""`orch compare`: two builds' runs side by side, a verdict per test, and a CI gate (--fail-on regression)."""

from __future__ import annotations

import json
from dataclasses import asdict

import click

from orchestrator import results, tables
from orchestrator.analyze import compare_columns, glossary, side_by_side, stats
from orchestrator.cli.group import data_format, db_option, main, threshold_option
from orchestrator.errors import Regressed

COMPARE_HELP = f"""Compare two builds arm by arm (head/base).

Runs join on recipe text, arm parameters, model hashes, prompt set and mode. A change is marked only when beyond
the threshold and statistically different. Where both builds ran interleaved in one sweep (orch run RECIPE --build
BASE,HEAD), only such sweeps count and the test is paired: the runs pair by sweep and repeat, and the ratio (the
geometric mean of the paired ratios) differs where its 95% t-interval excludes 1, from 2 pairs. Runs measured apart
are unpaired: Mann-Whitney U from 4 runs a side, and below that no verdict (too few runs). The table fits in 120
characters: the recipe where there are several, the arm, the parameters that tell one recipe's arms apart, a key
column only where two tests would look alike without it, and the figures; its last line names what it left out.
--wide shows every parameter and key column that differs. Base and head naming the same build is a warning, and no
ratio is shown.

{glossary.help_block(glossary.COMPARE, "Columns:")}

Example: orch compare --base f49e917 --head 0c1e570 --format json
"""


@main.command("compare", help=COMPARE_HELP)
@click.option("--base", "base_ref", default=None, help="Base build: commit prefix, tag or build name.")
@click.option("--head", "head_ref", default=None, help="Head build: commit prefix, tag or build name.")
@click.option(
    "--base-host",
    default=None,
    metavar="HOST",
    help="Only the base side's runs on this machine (hostname or host id); with --head-host, --base and "
    "--head default to the newest build both ran, and what differs between the machines is listed.",
)
@click.option("--head-host", default=None, metavar="HOST", help="Only the head side's runs on this machine.")
@click.option("--recipe", default=None, help="Only runs of this recipe (path or file name).")
@threshold_option
@data_format("table", "md", "json")
@click.option("--wide", is_flag=True, help="Every parameter and key column that differs, however wide.")
@click.option(
    "--fail-on",
    "fail_on",
    type=click.Choice(["regression"]),
    default=None,
    help="Exit 53 after the comparison when a test regressed (beyond --threshold and statistically "
    "different) or was measured on one side only (newly failing, skipped or ok): a CI gate, as asv "
    "continuous fails a job.",
)
@db_option
def compare_command(base_ref, head_ref, base_host, head_host, recipe, threshold, fmt, wide, fail_on, db):
    stats.import_quantiles_meanwhile()  # while the queries run

    limit = threshold
    if not (base_host or head_host) and not (base_ref and head_ref):
        raise click.UsageError("name two builds (--base and --head) or two hosts (--base-host and --head-host)")
    with results.open(db) as found:
        result = found.compare(
            base_ref, head_ref, recipe=recipe, threshold=limit, base_host=base_host, head_host=head_host
        )
        env_lines = found.host_differences(result)
    base_host, head_host = result.base_host, result.head_host
    if base_ref is None or head_ref is None:  # named by host: the builds found for them
        base_ref, head_ref = base_ref or result.base, head_ref or result.head
    if fmt == "json":
        click.echo(json.dumps({**asdict(result), "host_differences": env_lines}, indent=2, default=str))
        if result.warning:
            click.echo(f"warning: {result.warning}", err=True)
    else:
        _print_comparison(result, limit, base_ref, head_ref, base_host, head_host, recipe, fmt, wide, env_lines)
    if fail_on == "regression":
        _fail_on_regression(result)


# What the gate fails on: a test measurably slower, or one that only one side measured (a head build whose runs
# crash must not pass the gate it would pass by measuring nothing; nor a base that measured nothing to judge by),
# or one whose stored values are not numbers (NaN, infinite: nothing can be concluded from them)
GATED = (
    side_by_side.REGRESSION,
    side_by_side.NOT_FINITE,
    side_by_side.NEWLY_FAILING,
    side_by_side.NEWLY_SKIPPED,
    side_by_side.NEWLY_OK,
    side_by_side.NO_DATA,
)


def _fail_on_regression(result) -> None:
    regressed = [r for r in result.rows if r.get("verdict") in GATED]
    if regressed:
        names = ", ".join(_gated_name(r) for r in regressed[:5]) + (", ..." if len(regressed) > 5 else "")
        raise Regressed(f"{len(regressed)} test(s) regressed from {result.base} to {result.head}: {names}")


def _gated_name(row: dict) -> str:
    """A gated test as the gate's line names it: its arm, and why where it is not slower but gone."""
    verdict = row["verdict"]
    return f"{row.get('arm')}" + ("" if verdict == side_by_side.REGRESSION else f" ({verdict})")


def _print_comparison(result, limit, base_ref, head_ref, base_host, head_host, recipe, fmt, wide, env_lines) -> None:
    def on(host):
        return f" on {host}" if host else ""

    click.echo(f"base {result.base}{on(base_host)}  ->  head {result.head}{on(head_host)}  (threshold {limit:.0%})")
    if env_lines:
        click.echo(
            tables.fill(f"the machines differ in: {'; '.join(env_lines)}")
            if len(env_lines) <= 3
            else "the machines differ in:\n" + "\n".join(tables.fill(f"  {line}") for line in env_lines)
        )
    if result.warning:
        click.echo(tables.fill(f"warning: {result.warning}"))
    if result.timing:
        click.echo(tables.fill(f"timing: {result.timing}"))
    shown = compare_columns.table(result.rows, wide=wide)
    rows = _readable(result.rows)
    if fmt == "md":
        kept, left_out = tables.fit(rows, shown.columns, WIDTH, shown.droppable)
        text = tables.render(rows, "md", kept)
    else:
        titles, columns = {}, shown.columns
        if "recipe" in columns and not wide:  # a line above each recipe's rows instead of a column
            rows, titles = compare_columns.by_recipe(rows)
            columns = [c for c in columns if c != "recipe"]
        text, left_out = tables.text_table(
            rows, columns, width=None if wide else WIDTH, droppable=shown.droppable, titles=titles
        )
    click.echo(text)
    if few := sum(str(r.get("test") or "").startswith("too few runs") for r in result.rows):
        click.echo(
            tables.fill(
                f"{few} test{'s have' if few > 1 else ' has'} too few runs for a verdict: measured "
                f"apart, a test needs {side_by_side.MIN_MANN_WHITNEY} runs a side (--repeat "
                f"{side_by_side.MIN_MANN_WHITNEY}); run in one sweep (--build BASE,HEAD) they pair "
                f"from 2"
            )
        )
    if hidden := shown.hidden + [c for c in shown.columns if c in left_out]:
        hosted = f" --base-host {base_host} --head-host {head_host}" if base_host else ""
        again = (
            f"orch compare --base {base_ref} --head {head_ref}{hosted}{' --recipe ' + recipe if recipe else ''} --wide"
        )
        click.echo(tables.fill(f"not shown: {', '.join(hidden)} ({again} shows every column)"))


WIDTH = tables.TABLE_WIDTH  # characters a table fits in unless --wide


def _readable(rows: list[dict]) -> list[dict]:
    """The interval as one cell, model and recipe hashes cut to 12 hex digits (enough to tell them apart)."""
    for row in rows:
        low, high = row.get("ratio_low"), row.get("ratio_high")
        row["ratio_ci95"] = f"[{low:.3f}, {high:.3f}]" if low is not None and high is not None else None
        for key in ("recipe_hash", "target_sha256", "draft_sha256"):
            row[key] = row[key][:12] if row.get(key) else row.get(key)
    return rows
