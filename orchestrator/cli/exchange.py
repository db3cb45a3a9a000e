"""`orch export` and `orch import`: results carried between databases and machines by global id."""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path

import click

from orchestrator import disk
from orchestrator.analyze import summaries
from orchestrator.cli.group import ID, db_option, main, opened_db
from orchestrator.errors import ImportConflicts
from orchestrator.store import exchange, exchange_merge


@main.command("export")
@click.argument("sweeps", nargs=-1, type=ID)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory to write: one Parquet file per table and manifest.json.",
)
@db_option
def export_command(sweeps, out_dir, db):
    """Write sweeps (default: all) as Parquet files to send elsewhere.

    One file per table, with the builds, binaries and models the runs use, and manifest.json. Send the directory to someone else; `orch import DIR` merges it into their database.

    Example: orch export 12 13 --out results-3090/
    """

    with opened_db(db) as con, disk.writing(out_dir):  # an export cut short leaves nothing it made
        counts = exchange.export(con, out_dir, list(sweeps) or None)
    click.echo(
        f"orch: exported {counts['sweeps']} sweeps, {counts['runs']} runs to {out_dir} ("
        + ", ".join(f"{n} {t}" for t, n in counts.items() if t not in ("sweeps", "runs"))
        + ")"
    )


@main.command("import")
@click.argument("sources", nargs=-1, required=True, type=click.Path(path_type=Path))
@db_option
def import_command(sources, db):
    """Merge exports or other results files into the database.

    SOURCES are `orch export` directories or .duckdb results files.
    Rows are matched by global id: importing twice changes nothing, overlapping exports merge, and a row
    stored already with different content is kept as stored and reported (exit 43) while the rest merges.
    Local sweep and run numbers are given anew; links follow. Exports from older orch versions import.

    Example: orch import results-3090/ results-4060ti/ other-box.duckdb
    """

    conflicts = []
    with ExitStack() as staging:
        # Every source checked and staged before the results file is opened: a bad one writes nothing anywhere.
        staged = [(source, staging.enter_context(exchange.staged(source))) for source in sources]
        with opened_db(db, write=True) as con:
            for source, path in staged:
                start = time.monotonic()
                report = exchange_merge.merge(con, path, str(source))
                added = sum(report.added.values())
                click.echo(
                    f"orch: {source}: {report.added.get('sweeps', 0)} sweeps, {report.added.get('runs', 0)} "
                    f"runs new ({added} rows), {sum(report.present.values())} rows stored already, "
                    f"{len(report.conflicts)} conflicts ({time.monotonic() - start:.1f}s)"
                )
                for table, n in report.dropped.items():
                    click.echo(
                        f"orch: {source}: {n} {table} rows left out: the row they belong to is not in it", err=True
                    )
                conflicts += report.conflicts
            summaries.keep_stale(con)  # the sweeps it added or merged runs into
    if conflicts:
        shown = "; ".join(c.describe() for c in conflicts[:5])
        more = f" (and {len(conflicts) - 5} more)" if len(conflicts) > 5 else ""
        raise ImportConflicts(
            f"{len(conflicts)} rows are stored already with different content and were kept as "
            f"stored: {shown}{more}; everything else was merged"
        )
