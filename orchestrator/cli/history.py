"""`orch history`: a recipe arm's metric across the builds that ran it, in commit order, as a table and a PNG."""

from __future__ import annotations

from pathlib import Path

import click

from orchestrator import config, tables
from orchestrator.build.in_results import resolve_stored_build
from orchestrator.cli.group import data_format, db_option, main, metric_option, opened_db, threshold_option
from orchestrator.report import history
from orchestrator.source.mirror import Mirror


@main.command("history")
@click.argument("recipe", metavar="RECIPE")
@click.option("--arm", required=True, help="The arm whose metric is drawn.")
@metric_option
@threshold_option
@click.option(
    "--builds",
    default=None,
    metavar="A,B,...",
    help="Only these builds (names or commit prefixes); default: every build that ran the recipe.",
)
@click.option(
    "--png",
    "png_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to draw the PNG [default: history-<arm>-<metric>.png].",
)
@data_format("table", "md", "csv", "json")
@db_option
def history_command(recipe, arm, metric, threshold, builds, png_path, fmt, db):
    """Draw a recipe arm's metric across builds, in commit order.

    A table and a PNG (means with 95% interval bars, every run a dot). Steps where the metric changes from one commit to the next beyond --threshold and significantly (the rule of
    `orch compare`) are marked in both.

    Example: orch history spec_defaults.j2 --arm draft --metric acceptance
    """

    with opened_db(db) as con:  # references resolved as orch compare's are: a prefix, tag or name, one build each
        wanted = [resolve_stored_build(con, b) for b in builds.split(",") if b.strip()] if builds else None
        points = history.points(con, recipe, arm, metric, wanted, Mirror(config.mirror_dir()))
    steps = history.mark_steps(points, threshold)
    click.echo(tables.render(history.rows(points), fmt, history.COLUMNS))
    path = png_path or Path(f"history-{arm}-{metric}.png")
    history.draw(points, recipe, arm, metric, path)
    prose = fmt == "table"  # other formats stay parseable on stdout: the sentences go to stderr
    for line in steps:
        click.echo(tables.fill(line) if prose else line, err=not prose)
    click.echo(f"plot: {path}", err=not prose)
