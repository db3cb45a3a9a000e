"""`orch watch`: follow a running sweep from another terminal (read-only; the sweep is never slowed or blocked)."""

from __future__ import annotations

import sys
import time

import click

from orchestrator.cli.group import ID, Finite, db_option, main, opened_db
from orchestrator.errors import NoSuchSweep
from orchestrator.report.watch import frame
from orchestrator.store import queries, utcnow

CLEAR = "\x1b[H\x1b[2J"


@main.command("watch")
@click.argument("sweep", type=ID, required=False)
@click.option(
    "-i",
    "--interval",
    type=Finite(min=0.2, max=3600),
    default=2.0,
    show_default=True,
    help="Seconds between refreshes.",
)
@click.option("--once", is_flag=True, help="Print one frame and exit.")
@db_option
def watch_command(sweep, interval, once, db):
    """Follow a sweep live: progress, ETA, summary, failures.

    SWEEP defaults to the newest running sweep (else the newest). On a terminal the view redraws in place;
    piped, a frame is printed whenever another run ends. It ends when the sweep does, with its verdict.

    Example: orch watch --interval 5
    """

    tty = sys.stdout.isatty()
    last_ended = None
    while True:
        with opened_db(db) as con:  # opened per frame: the sweep's writer gets the file in between
            sweep_id = queries.watched_sweep(con, sweep)
            if sweep_id is None:
                raise NoSuchSweep(
                    f"no sweep {sweep}; list them with `orch sweeps`"
                    if sweep is not None
                    else "no sweep stored yet; start one with orch run RECIPE, then watch it"
                )
            sweep = sweep_id  # follow this one to its end, even when a newer one starts
            shown = frame(con, sweep_id, utcnow())
        if tty:
            getattr(sys.stdout, "underlying", sys.stdout).write(CLEAR)  # the one escape orch sends on purpose
            click.echo(shown.text)
        elif shown.ended != last_ended or not shown.running:
            click.echo(shown.text + "\n")
        last_ended = shown.ended
        if once or not shown.running:
            return
        time.sleep(interval)
