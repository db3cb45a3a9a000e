"""`orch repair`: the results file's own upkeep."""

from __future__ import annotations

import click

from orchestrator import config, store
from orchestrator.analyze import summaries
from orchestrator.cli.group import db_option, main
from orchestrator.store import schema


@main.command("repair")
@db_option
def repair_command(db):
    """Restore dropped tables and views; keep sweep summaries.

    For a file damaged by hand (a DROP TABLE, a dropped view or column): they are made again from the
    migrations. Rows that were deleted stay gone; everything still stored is kept. Then each finished sweep
    whose summary is not kept, or was kept from other rows or by another orch version, has it computed and
    kept, so `orch summary` reads it instead of computing it (a sweep's end, reparse and import keep theirs).

    Example: orch repair --db results.duckdb
    """

    path = db or config.db_path()
    with store.opened(path, create=False, check=False) as con:
        restored = schema.repair(con)
        kept_anew = summaries.keep_stale(con)
    click.echo(f"restored {', '.join(restored)} in {path}" if restored else f"nothing to repair in {path}")
    kept = "the summary of 1 sweep" if kept_anew == 1 else f"the summaries of {kept_anew} sweeps"
    click.echo(f"kept {kept}" if kept_anew else "every finished sweep's summary is kept")
