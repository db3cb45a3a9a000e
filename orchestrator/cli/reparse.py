"""`orch reparse`: every stored run's metrics derived again from its raw logs, with today's parsers."""

from __future__ import annotations

import click

from orchestrator.analyze import summaries
from orchestrator.cli.group import db_option, main, opened_db
from orchestrator.store.reparse import reparse_all


@main.command("reparse")
@db_option
def reparse_command(db):
    """Re-derive stored metrics from the raw logs.

    Every stored run is parsed again with the current parsers; prints how many runs changed and which fields.

    Example: orch reparse
    """

    with opened_db(db, write=True, create=False) as con:
        result = reparse_all(con)
        summaries.keep_stale(con)  # the sweeps whose metrics changed
    click.echo("\n".join(result.lines()))
